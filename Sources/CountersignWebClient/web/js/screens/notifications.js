// Settings → Notifications, and the Messages screen's "Turn on notifications": whether this browser is told of
// new messages and sign-in requests while Countersign is closed (../web-push.js, docs/PROTOCOL.md §2.2).
import { describe } from "../api.js";
import { withAuthenticatorSession } from "../authenticator/runtime.js";
import { openSession } from "../device.js";
import { el } from "../dom.js";
import { keystore } from "../keystore.js";
import { session } from "../session.js";
import { notificationState, signingOut, turnOff, turnOn } from "../web-push.js";

/** `request(token)` with this browser's messaging device's session: the page's, or (before the inbox has
 *  opened it) one opened for this. Nothing when the browser has no device of the account yet. */
async function withMessagingDevice(request) {
  if (session.deviceToken) return request(session.deviceToken);
  const record = await keystore.device(session.account.id);
  if (!record?.deviceId) return undefined;
  return request((await openSession(record)).token);
}

/** This browser's devices of the account, as web-push.js takes them: its messaging device, and its
 *  authenticator when one runs here. */
export const browserDevices = () => [
  withMessagingDevice,
  (request) => withAuthenticatorSession(session.account?.id, request),
];

const WORDS = {
  on:
    "On: this browser is told of new messages (and sign-in requests, when it approves them) while Countersign " +
    "is closed.",
  off: "Off: this browser hears of new messages and sign-in requests only while Countersign is open.",
  denied:
    "Blocked: this browser's settings block notifications from this site. Allow them in the browser's site " +
    "settings, then turn them on here.",
  unsupported: "This browser cannot show notifications while Countersign is closed.",
};

/** Turns notifications on for this browser and account; throws an Error saying what to do. */
export const turnOnHere = () => turnOn(session.account.id, browserDevices());

/** Signing out here: the account's devices are told nothing more through this browser. */
export const signingOutHere = () => signingOut(session.account.id, browserDevices());

/** The Settings section: what notifications say, whether they are on here, and the button that changes it. */
export function notificationsPart(said) {
  const accountId = session.account.id;
  const state = el("p", { id: "notifications-state" }, "Looking…");
  const toggle = el(
    "button",
    { type: "button", hidden: true, "aria-describedby": "notifications-state" },
    "Turn on notifications",
  );
  let current = "off";
  const show = (name) => {
    current = name;
    state.textContent = WORDS[name];
    toggle.hidden = name === "unsupported" || name === "denied";
    toggle.textContent = name === "on" ? "Turn off notifications" : "Turn on notifications";
  };
  const look = () => notificationState(accountId).then(show, () => show("unsupported"));
  look();
  // Allowed or blocked in the browser's settings meanwhile: said at once.
  navigator.permissions
    ?.query({ name: "notifications" })
    .then((status) => (status.onchange = look))
    .catch(() => {});
  toggle.addEventListener("click", async () => {
    said.status.textContent = current === "on" ? "Turning off…" : "Turning on…";
    said.alert.textContent = "";
    toggle.disabled = true;
    try {
      if (current === "on") {
        await turnOff(accountId, browserDevices());
        said.status.textContent = "Notifications turned off for this browser.";
      } else {
        await turnOn(accountId, browserDevices());
        said.status.textContent = "Notifications turned on for this browser.";
      }
    } catch (error) {
      said.status.textContent = "";
      // The state line says it already when the browser blocks them.
      if (Notification.permission !== "denied") said.alert.textContent = describe(error);
    } finally {
      toggle.disabled = false;
      await look();
      toggle.focus();
    }
  });
  return [
    el("h2", {}, "Notifications"),
    el(
      "p",
      {},
      "A notification says only that something arrived: never a message's text, its sender or where a sign-in " +
        "comes from. Tapping it opens Countersign at the message (after the key gate, when it is on).",
    ),
    state,
    toggle,
  ];
}
