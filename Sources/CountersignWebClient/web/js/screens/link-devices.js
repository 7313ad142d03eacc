// Linked devices on Home and in Settings, Devices (issue 35 §2, linking.js): a new browser of the account shows
// "Link this device" with its link code and QR until a device of the account approves it, and notices the
// approval by itself (asking again every few seconds while shown, and when the page comes back into view); a
// device already in use shows "Is this your new device?" for each device added after it that nobody approved,
// with its name, fingerprint and link code, "Yes, approve" (a vouch signed by this browser's device key, the key
// gate unlocked first when it must be) and "No, remove it" (the device revoked).
import { describe } from "../api.js";
import { nameElement, visibleText } from "../display-name.js";
import { el, feedback, replace, speakBeside } from "../dom.js";
import { keystore } from "../keystore.js";
import { approve, awaitingLink, linkState, linkUri } from "../linking.js";
import { qrCode } from "../qr.js";
import { revokeDevice } from "../server/devices.js";
import { session } from "../session.js";
import { deviceReady } from "./device-ready.js";
import { NotUnlocked, unlockedRecord } from "./gate.js";
import { withReauth } from "./reauth.js";

/** How often a shown panel asks the server again (ms). */
const POLL_MS = 3_000;

/** A link code in two halves of three groups, each kept on one line: read as "1234 5678 9012", "3456 …". */
const codeParts = (code) => {
  const groups = code.split(" ");
  return [el("span", {}, groups.slice(0, 3).join(" ")), " ", el("span", {}, groups.slice(3).join(" "))];
};

const clock = (iso) => {
  const at = new Date(iso);
  return Number.isFinite(at.getTime()) ? at.toLocaleString([], { dateStyle: "medium", timeStyle: "short" }) : "";
};

/**
 * The panel, empty while there is nothing to link. It makes the browser a device first when the page is not
 * one yet (a reload straight into Settings), then keeps itself current while it is in the page. `onChange()`
 * runs after a device was approved or removed here.
 */
export function linkDevicesPanel({ onChange = () => {} } = {}) {
  const panel = el("div", { class: "link-devices" });
  const prompts = el("div"); // the key gate's unlock, a re-authentication
  const mine = el("div"); // this browser, waiting to be linked
  const theirs = el("div"); // devices waiting for this browser's approval
  // What an action says, placed beside the devices when one of their buttons is pressed (speakBeside): no
  // empty status or alert sits on Home before then.
  const said = feedback();
  panel.append(prompts, mine, theirs);
  speakBeside(said, theirs);
  let record = null;
  let waitingShown = ""; // the devices listed now, so a poll that finds the same ones leaves the page alone
  let wasWaiting = false;
  let timer = null;

  async function showMine() {
    const state = await linkState(record);
    if (state.state === "waiting") {
      if (!wasWaiting) {
        wasWaiting = true;
        replace(
          mine,
          el(
            "section",
            { class: "notice link-this", "aria-label": "Link this device" },
            el("h2", {}, "Link this device"),
            el(
              "p",
              {},
              "Approve this browser from a device of yours you already use: open Countersign there (Settings, " +
                "Devices), run “countersign device approve”, or on your authenticator “countersign authenticator " +
                "approve-device”, and check that it shows this code.",
            ),
            el(
              "p",
              { class: "link-code mono", "aria-label": "Link code", "data-testid": "link-code" },
              codeParts(state.code),
            ),
            qrCode(linkUri(state.deviceId, state.code), { label: "QR code of this browser's link code" }),
            el(
              "p",
              { class: "muted" },
              "Until then, people who pinned your account are asked to compare safety numbers before they write " +
                "to you.",
            ),
            el("p", { class: "muted" }, "Waiting for approval…"),
          ),
        );
      }
    } else if (wasWaiting) {
      wasWaiting = false;
      replace(
        mine,
        el(
          "p",
          { class: "notice", role: "status" },
          "This browser is linked: approved by “",
          nameElement(state.by ?? ""),
          "”. People who pinned your account follow it without a warning.",
        ),
      );
    }
  }

  async function showTheirs() {
    const waiting = await awaitingLink(record);
    const shownNow = waiting.map((w) => `${w.device.id} ${w.code}`).join(",");
    if (shownNow === waitingShown) return;
    waitingShown = shownNow;
    if (!waiting.length) return theirs.replaceChildren();
    replace(
      theirs,
      el(
        "section",
        { class: "notice link-approve", "aria-label": "Is this your new device?" },
        el("h2", {}, "Is this your new device?"),
        el("ul", { class: "list" }, waiting.map(item)),
      ),
    );
  }

  function item(w) {
    const d = w.device;
    const label = visibleText(d.name);
    const yes = el("button", { type: "button", class: "primary" }, "Yes, approve");
    const no = el("button", { type: "button", class: "danger" }, "No, remove it");
    yes.addEventListener("click", () =>
      act(async () => {
        const unlocked = await unlockedRecord(prompts, "Unlock to approve your new device.");
        await approve(unlocked, w);
        return `Approved “${label}”. People who pinned this browser now follow it without a warning.`;
      }),
    );
    no.addEventListener("click", () =>
      act(async () => {
        await withReauth(prompts, () => revokeDevice(d.id));
        return `Removed “${label}”: it can no longer read or send messages as you.`;
      }),
    );
    return el(
      "li",
      { "aria-label": label },
      el("strong", {}, nameElement(d.name)),
      el("div", { class: "muted" }, `Added ${clock(d.createdAt)}`),
      el("div", {}, "Fingerprint ", el("span", { class: "mono" }, w.fingerprint)),
      el("div", {}, "Link code"),
      el("p", { class: "link-code mono", "data-testid": "link-code" }, codeParts(w.code)),
      el(
        "p",
        { class: "muted" },
        "Approve it only if the new device shows this same code. If you did not just sign in somewhere new, " +
          "remove it and change your password.",
      ),
      el("div", { class: "actions" }, yes, no),
    );
  }

  async function act(action) {
    said.alert.textContent = "";
    said.status.textContent = "";
    try {
      said.status.textContent = await action();
      waitingShown = null;
      onChange();
      await refresh();
    } catch (error) {
      if (!(error instanceof NotUnlocked)) said.alert.textContent = describe(error);
    }
  }

  let failedOnce = false;
  async function refresh() {
    if (!record) return;
    try {
      await showMine();
      await showTheirs();
      failedOnce = false;
    } catch (error) {
      // Said once; a poll that fails again (offline) says nothing more until one succeeds.
      if (!said.alert.isConnected) panel.append(said.status, said.alert);
      if (!failedOnce) said.alert.textContent = `Linked devices could not be checked: ${describe(error)}`;
      failedOnce = true;
    }
  }

  const onView = () => {
    if (!panel.isConnected) return stop();
    if (document.visibilityState === "visible") refresh();
  };
  function stop() {
    clearInterval(timer);
    window.removeEventListener("focus", onView);
    document.removeEventListener("visibilitychange", onView);
  }

  (async () => {
    const accountId = session.account.id;
    try {
      if (!session.deviceToken) {
        const device = await deviceReady(prompts);
        if (!device) return;
      }
      record = await keystore.device(accountId);
      if (!record?.deviceId || session.account?.id !== accountId) return;
    } catch (error) {
      if (!(error instanceof NotUnlocked)) panel.append(el("p", { role: "alert", class: "alert" }, describe(error)));
      return;
    }
    await refresh();
    timer = setInterval(onView, POLL_MS);
    window.addEventListener("focus", onView);
    document.addEventListener("visibilitychange", onView);
  })();
  return panel;
}
