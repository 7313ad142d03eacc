// The signed-in browser's inbox: holds the push channel while signed in, stores each message still sealed
// before it is acknowledged, tells the screens, and shows a notification for a new incoming message.
import { SignedOutError } from "./api.js";
import { emit } from "./events.js";
import { isUnlocked } from "./gate-keys.js";
import { renewWhenUnlocked } from "./gate.js";
import { keystore } from "./keystore.js";
import { keepCopies, store } from "./messages.js";
import { peers } from "./peers.js";
import { openPushChannel } from "./push.js";
import { requireAccountSession } from "./server/accounts.js";
import { session } from "./session.js";
import { keepRegistered, pushOn } from "./web-push.js";

let channel = null;
let channelFor = null;
let state = { state: "closed", detail: "" };
let messagesShown = () => false;

// The tabs of this browser share one device, and the server keeps one push connection per device (a
// second closes the first: 4409, state "elsewhere"). The tab that lost it tells the others, so that the
// one that has it now can say so too.
const tabs = "BroadcastChannel" in window ? new BroadcastChannel("countersign inbox") : null;
tabs?.addEventListener("message", ({ data }) => {
  if (data?.kind === "lost" && channel && data.accountId === channelFor && ["connecting", "live", "long-poll"].includes(
    state.state,
  )) {
    emit("inbox", { kind: "moved-here" });
  }
});

// What happens is told as the signal "inbox" (events.js): { kind: "message", entry }, { kind: "state", state,
// detail }, { kind: "moved-here" }; a click on a notification as "message-requested" (the message's ID).

export const pushState = () => state;

/** `isShown()`: whether the Messages screen is the one shown (its lists update themselves there). */
export function whenMessagesShown(isShown) {
  messagesShown = isShown;
}

function notify(entry) {
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  // Messages open and in view: the new message is in its list already; a notification only when the page
  // is hidden or another screen is shown.
  if (document.visibilityState === "visible" && messagesShown()) return;
  // Hidden, with pushes reaching this browser: the service worker shows it (one event, one notification).
  if (document.visibilityState !== "visible" && pushOn()) return;
  // PingIdentity's words; nothing of the message (not even the sender) is in it.
  const notification = new Notification("Encrypted Message Received", {
    body: "Tap to decrypt and view the message",
    tag: entry.id,
  });
  notification.onclick = () => {
    window.focus();
    notification.close();
    emit("message-requested", entry.id);
  };
}

// Messages that arrived, opened in the background a moment later, a batch at a time (one directory request per
// sender), while the device's keys are open: a locked key gate leaves them sealed until they are shown.
const arrived = new Set();
let opening = null;
let openingFor = 0; // which loop is the current one: a loop of an earlier account leaves the next one's alone
const OPEN_AFTER_MS = 500;
// At most this many are waiting, and opened a batch at a time: a flood is opened when shown instead.
const WAITING_AT_MOST = 1_000;
const BATCH = 50;

function openInBackground(accountId, id) {
  if (arrived.size >= WAITING_AT_MOST) return;
  arrived.add(id);
  const mine = openingFor;
  opening ??= (async () => {
    await new Promise((resolve) => setTimeout(resolve, OPEN_AFTER_MS));
    while (arrived.size && session.account?.id === accountId) {
      const batch = [...arrived].slice(0, BATCH);
      for (const id of batch) arrived.delete(id);
      const record = await keystore.device(accountId).catch(() => null);
      if (!record?.deviceId || !record.signing?.privateKey || !record.encryption?.privateKey) break;
      const usable = () => session.account?.id === accountId && (!record.gate || isUnlocked(accountId));
      await keepCopies(record, batch, { usable }).catch(() => {});
    }
    if (mine !== openingFor) return; // the inbox stopped meanwhile: the next loop is not this one's to end
    arrived.clear();
    opening = null;
  })();
}

export function startInbox(accountId) {
  stopInbox();
  channelFor = accountId;
  // This browser's subscription, when notifications are on, goes to the device (new since, say).
  keepRegistered(accountId, session.deviceToken).catch(() => {});
  channel = openPushChannel({
    deviceToken: () => session.deviceToken,
    // With the key gate locked, the new session waits for the next unlock (or finds the device revoked).
    renewSession: async () => {
      await requireAccountSession();
      const device = await renewWhenUnlocked(accountId);
      if (session.account?.id !== accountId) throw new SignedOutError();
      session.setDevice(device);
      keepRegistered(accountId, session.deviceToken).catch(() => {});
    },
    onMessage: async (entry) => {
      if (session.account?.id !== accountId) throw new Error("signed out");
      const added = await store(entry);
      if (added) {
        emit("inbox", { kind: "message", entry });
        // A sender blocked here (Messages → Requests) is not announced, nor opened ahead.
        const blocked = (await peers().catch(() => null))?.blocked ?? new Set();
        if (!blocked.has(entry.from)) openInBackground(accountId, entry.id);
        if (entry.direction === "incoming" && !blocked.has(entry.from)) notify(entry);
      }
    },
    onState: (name, detail = "") => {
      state = { state: name, detail };
      if (name === "elsewhere") tabs?.postMessage({ kind: "lost", accountId });
      emit("inbox", { kind: "state", ...state });
    },
  });
}

export function stopInbox() {
  // A batch under way stops at its next message (the account changed); a new loop starts with the next arrival.
  arrived.clear();
  opening = null;
  openingFor += 1;
  channel?.close();
  channel = null;
  channelFor = null;
  state = { state: "closed", detail: "" };
}
