// The signed-in browser's inbox: holds the push channel while signed in, stores each message still sealed
// before it is acknowledged, tells the screens, and shows a notification for a new incoming message.
import { SignedOutError } from "./api.js";
import { renewWhenUnlocked } from "./gate.js";
import { store } from "./messages.js";
import { openPushChannel } from "./push.js";
import { requireAccountSession } from "./server/accounts.js";
import { session } from "./session.js";

const listeners = new Set();
let channel = null;
let channelFor = null;
let state = { state: "closed", detail: "" };
let openRequest = () => {};
let messagesShown = () => false;

// The tabs of this browser share one device, and the server keeps one push connection per device (a
// second closes the first: 4409, state "elsewhere"). The tab that lost it tells the others, so that the
// one that has it now can say so too.
const tabs = "BroadcastChannel" in window ? new BroadcastChannel("countersign inbox") : null;
tabs?.addEventListener("message", ({ data }) => {
  if (data?.kind === "lost" && channel && data.accountId === channelFor && ["connecting", "live", "long-poll"].includes(state.state)) {
    emit({ kind: "moved-here" });
  }
});

/** `listener({ kind: "message" | "state", ... })`; returns a function that removes it. */
export function subscribe(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

const emit = (event) => listeners.forEach((listener) => listener(event));

export const pushState = () => state;

/** Where a click on a notification goes: `open(messageId)`. */
export function onOpenRequest(open) {
  openRequest = open;
}

/** `isShown()`: whether the Messages screen is the one shown (its lists update themselves there). */
export function whenMessagesShown(isShown) {
  messagesShown = isShown;
}

function notify(entry) {
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  // Messages open and in view: the new message is in its list already; a notification only when the page
  // is hidden or another screen is shown.
  if (document.visibilityState === "visible" && messagesShown()) return;
  // PingIdentity's words; nothing of the message (not even the sender) is in it.
  const notification = new Notification("Encrypted Message Received", { body: "Tap to decrypt and view the message", tag: entry.id });
  notification.onclick = () => {
    window.focus();
    notification.close();
    openRequest(entry.id);
  };
}

export function startInbox(accountId) {
  stopInbox();
  channelFor = accountId;
  channel = openPushChannel({
    deviceToken: () => session.deviceToken,
    // With the key gate locked, the new session waits for the next unlock (or finds the device revoked).
    renewSession: async () => {
      await requireAccountSession();
      const device = await renewWhenUnlocked(accountId);
      if (session.account?.id !== accountId) throw new SignedOutError();
      session.setDevice(device);
    },
    onMessage: async (entry) => {
      if (session.account?.id !== accountId) throw new Error("signed out");
      const added = await store(entry);
      if (added) {
        emit({ kind: "message", entry });
        if (entry.direction === "incoming") notify(entry);
      }
    },
    onState: (name, detail = "") => {
      state = { state: name, detail };
      if (name === "elsewhere") tabs?.postMessage({ kind: "lost", accountId });
      emit({ kind: "state", ...state });
    },
  });
}

export function stopInbox() {
  channel?.close();
  channel = null;
  channelFor = null;
  state = { state: "closed", detail: "" };
}
