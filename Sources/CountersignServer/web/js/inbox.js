// The signed-in browser's inbox: holds the push channel while signed in, stores each message still sealed
// before it is acknowledged, tells the screens, and shows a notification for a new incoming message.
import { SignedOutError, requireAccountSession } from "./api.js";
import { renewWhenUnlocked } from "./gate.js";
import { store } from "./messages.js";
import { openPushChannel } from "./push.js";
import { session } from "./session.js";

const listeners = new Set();
let channel = null;
let state = { state: "closed", detail: "" };
let openRequest = () => {};

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

function notify(entry) {
  if (!("Notification" in window) || Notification.permission !== "granted") return;
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
      emit({ kind: "state", ...state });
    },
  });
}

export function stopInbox() {
  channel?.close();
  channel = null;
  state = { state: "closed", detail: "" };
}
