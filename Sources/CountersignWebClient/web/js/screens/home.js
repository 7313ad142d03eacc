// Signed in: who, this browser's device, and sign out. The screens for messages, files, approvals and
// settings hang off here.
import { describe } from "../api.js";
import { unpair } from "../authenticator/runtime.js";
import { pairedRecord } from "../authenticator/store.js";
import { groupedKeyId, hex, sha256 } from "../bytes.js";
import { spki } from "../device-keys.js";
import { removeDevice } from "../device.js";
import { nameElement } from "../display-name.js";
import { el, replace, showCard } from "../dom.js";
import { on } from "../events.js";
import { isUnlocked, lock } from "../gate-keys.js";
import { pushState, stopInbox } from "../inbox.js";
import { withReauth } from "./reauth.js";
import { signOut } from "../server/sessions.js";
import { session } from "../session.js";
import { deviceReady } from "./device-ready.js";
import { linkDevicesPanel } from "./link-devices.js";
import { signingOutHere } from "./notifications.js";
import { needsFullSignIn, qrSessionLimits } from "./qr-signin.js";

/** docs/SPEC.md §2.4: SHA-256 of the SPKI, first 16 bytes, in four groups of 8 hex digits. */
async function fingerprint(publicKey) {
  return groupedKeyId(hex((await sha256(await spki(publicKey))).subarray(0, 16)));
}

const pushWords = {
  connecting: "Connecting to the push channel…",
  live: "Messages arrive live.",
  "long-poll": "Messages arrive by polling (the live channel cannot connect).",
  locked: "No messages arrive while the account is locked.",
  elsewhere: "Messages arrive live in another tab of this browser.",
};

export function homeScreen(app, { onSignedOut, onSettings, onMessages, onFiles, onApprovals, onDevice = () => {} }) {
  const account = session.account;
  const alert = el("p", { role: "alert", class: "alert" });
  const status = el("p", { role: "status", class: "status" });
  const deviceInfo = el("dl", { class: "facts", "aria-label": "This browser's device" });
  const signOutButton = el("button", { type: "button" }, "Sign out");
  // With the key gate open: lock the keys in every tab of this browser, staying signed in (SPEC §14.7).
  const lockKeys = el("button", { type: "button", hidden: !isUnlocked(account.id) }, "Lock keys");
  lockKeys.addEventListener("click", () => {
    lock(account.id);
    status.textContent = "Keys locked in every tab of this browser. Opening a message asks to unlock them.";
  });
  const stopWatching = on("gate-changed", (change) => {
    if (!lockKeys.isConnected) return stopWatching();
    if (change.accountId === account.id) lockKeys.hidden = !change.unlocked;
  });
  const settings = el("button", { type: "button", on: { click: onSettings } }, "Settings");
  const messages = el(
    "button",
    { type: "button", class: "primary", disabled: true, on: { click: onMessages } },
    "Messages",
  );
  const files = el("button", { type: "button", on: { click: onFiles } }, "Files");
  const approvals = el("button", { type: "button", on: { click: onApprovals } }, "Approvals");
  const push = el("p", { class: "muted", "data-testid": "push-state" });
  const showPush = ({ state }) => {
    push.textContent = pushWords[state] ?? "";
    // Revoked (its data here deleted, a remote wipe): this page's facts about the device go too.
    if (state === "revoked") deviceInfo.replaceChildren(), (status.textContent = ""), (messages.disabled = true);
  };
  showPush(pushState());
  const unsubscribe = on(
    "inbox",
    (event) => event.kind === "state" && (push.isConnected ? showPush(event) : unsubscribe()),
  );
  const remove = el(
    "button",
    { type: "button", class: "danger", disabled: true },
    "Remove this browser's keys and messages",
  );
  // Revoking a device needs a recent sign-in: asked for here when the server says so.
  const slot = el("div");
  // What a QR sign-in's session may not do yet, when the server refuses this browser a device.
  const limits = el("div");
  async function endSession() {
    await signingOutHere().catch(() => {});
    stopInbox();
    // Ended here first, so the server's answer (a 401 if it had already ended) is this sign-out's alone.
    const token = session.token;
    session.clear();
    try {
      await signOut(token);
    } catch {
      // Signed out here either way; the server's session expires by itself.
    }
  }
  async function removeAndSignOut() {
    alert.textContent = "";
    try {
      // The authenticator this browser may also be is unpaired first: when the server refuses (it is
      // the account's only second factor), nothing is removed and its words say what to do.
      await withReauth(slot, async () => {
        if (await pairedRecord(account.id)) await unpair(account.id);
        await removeDevice(session.token, account.id);
      });
    } catch (error) {
      alert.textContent = describe(error);
      return;
    }
    await endSession();
    onSignedOut("Signed out. This browser's keys and messages were removed.");
  }
  signOutButton.addEventListener("click", async () => {
    await endSession();
    onSignedOut("Signed out.");
  });
  remove.addEventListener("click", removeAndSignOut);
  showCard(
    app,
    { label: "Account", heading: `Signed in as ${account.username}` },
    el("p", {}, `${account.name} ${account.lastname}`),
    deviceInfo,
    limits,
    status,
    push,
    el("div", { class: "actions" }, messages, files, approvals, settings, lockKeys, signOutButton, remove),
    slot,
    alert,
  );

  async function becomeDevice() {
    // With the key gate on: unlocked first (or this page's device session kept while it is locked).
    const device = await deviceReady(slot, (step) => (status.textContent = step));
    // Signed out (or in as someone else) meanwhile: this device session is not for the page any more.
    if (!device) return;
    messages.disabled = false;
    replace(
      deviceInfo,
      el("dt", {}, "This browser"),
      // Its name may have been changed from another device: written out as display-name.js shows names.
      el("dd", {}, nameElement(device.deviceSession.device.name)),
      el("dt", {}, "Key fingerprint"),
      el("dd", { class: "mono", "data-testid": "fingerprint" }, await fingerprint(device.record.signing.publicKey)),
    );
    status.textContent = status.textContent ? `${status.textContent}. Device ready.` : "Device ready.";
    onDevice();
    deviceInfo.after(linkDevicesPanel());
  }
  (async () => {
    try {
      await becomeDevice();
    } catch (error) {
      if (!needsFullSignIn(error)) {
        alert.textContent = `This browser could not become a device: ${describe(error)}`;
        return;
      }
      // A QR sign-in: say what it can do, and let the password (and second factor) finish the job.
      status.textContent = "";
      replace(
        limits,
        qrSessionLimits(async () => {
          alert.textContent = "";
          try {
            await withReauth(slot, becomeDevice);
            limits.replaceChildren();
          } catch (again) {
            alert.textContent = describe(again);
          }
        }),
      );
    } finally {
      remove.disabled = false;
    }
  })();
}
