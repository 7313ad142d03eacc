// The service worker (docs/PROTOCOL.md §2.2), at the root so that it sees the whole app: it turns a Web Push
// into a notification while no page of Countersign is in view, and answers one. A push says only
// `{kind, id}` (and which authenticator, for a sign-in request); nothing of a message or a sign-in is in it.
// - "message": "Encrypted Message Received"; a tap opens the app at that message, where the key gate asks
//   first (js/screens/messages.js), as PingIdentity's biometric prompt does before decrypting.
// - "approval": the sign-in request is fetched with the authenticator's own device session and shown only when
//   it verifies under the challenge key pinned at pairing (js/authenticator/challenge.js), as "New
//   Authentication" with Approve and Deny. Deny is answered here, signed with the authenticator's
//   non-extractable key from IndexedDB; Approve opens the app's approval screen, where the number is chosen
//   (every request here has number matching). One gone meanwhile (answered, expired) shows nothing, and its
//   notification closes.
import { answerToken, verifyChallenge } from "./js/authenticator/challenge.js";
import { base64url, fromBase64url } from "./js/bytes.js";
import { sessionMessage, signLowS } from "./js/device-keys.js";
import { run } from "./js/keystore.js";
import { answerChallenge, authenticatorChallenges } from "./js/server/authenticator.js";
import { deviceSessionChallenge, openDeviceSession } from "./js/server/devices.js";
import { pushTarget, setPushSubscription, vapidKey } from "./js/server/notifications.js";

const ID = /^[A-Za-z0-9_-]{1,128}$/;

// A new version takes over at once: the worker keeps no state a page depends on.
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("push", (event) => event.waitUntil(received(event.data)));

// The push service replaced this browser's subscription (Firefox does, now and then): subscribe again and register
// the new one for each device of this browser that had one (an account that turned notifications on), each with
// its own device session opened with its key. A device whose key the key gate keeps wrapped cannot sign here:
// a page of the app registers it when it opens (js/web-push.js).
self.addEventListener("pushsubscriptionchange", (event) => event.waitUntil(resubscribed(event)));

async function resubscribed(event) {
  let fresh = event.newSubscription;
  if (!fresh) {
    const key = event.oldSubscription?.options?.applicationServerKey ?? fromBase64url((await vapidKey()).publicKey);
    fresh = await self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
  }
  const json = fresh.toJSON();
  const records = [
    ...((await run("devices", "readonly", (store) => store.getAll())) ?? []),
    ...((await run("authenticators", "readonly", (store) => store.getAll())) ?? []),
  ].filter((r) => r.deviceId && !r.pending && r.signing?.privateKey && !r.signing.wrapped);
  await Promise.allSettled(
    records.map((record) =>
      withSession(record, async (token) => {
        try {
          await pushTarget(token);
        } catch (error) {
          if (error?.status === 404) return; // this device's account did not turn notifications on
          throw error;
        }
        await setPushSubscription(json, token);
      }),
    ),
  );
}

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  event.waitUntil(clicked(event.notification.data ?? {}, event.action));
});

/** What a push asks for, or null: anything else (not JSON, another shape, an id too long) is ignored. */
function parse(data) {
  let push;
  try {
    push = data?.json();
  } catch {
    return null;
  }
  if (typeof push !== "object" || push === null || !ID.test(push.id ?? "")) return null;
  if (push.kind === "message") return { kind: "message", id: push.id };
  if (push.kind === "approval" && ID.test(push.device ?? "")) {
    return { kind: "approval", id: push.id, device: push.device };
  }
  return null;
}

async function windows() {
  return self.clients.matchAll({ type: "window", includeUncontrolled: true });
}

async function received(data) {
  const push = parse(data);
  if (!push) return;
  // A page in view has heard of it over its own channel, and says so there.
  if ((await windows()).some((w) => w.visibilityState === "visible")) return;
  if (push.kind === "message") {
    await self.registration.showNotification("Encrypted Message Received", {
      body: "Tap to decrypt and view the message",
      icon: "/icons/icon-192.png",
      tag: push.id,
      data: { kind: "message", id: push.id },
    });
    return;
  }
  const found = await pending(push.device, push.id);
  if (!found) return closeTagged(push.id);
  await self.registration.showNotification("New Authentication", {
    body: "You have a new authentication request.",
    icon: "/icons/icon-192.png",
    tag: push.id,
    requireInteraction: true,
    actions: [
      { action: "approve", title: "Approve" },
      { action: "deny", title: "Deny" },
    ],
    data: { kind: "approval", id: push.id, device: push.device },
  });
}

async function clicked(data, action) {
  if (data.kind === "message" && ID.test(data.id ?? "")) return open(`#/messages/${encodeURIComponent(data.id)}`);
  if (data.kind !== "approval") return;
  if (action !== "deny") return open("#/approvals");
  const found = await pending(data.device, data.id);
  if (!found) return;
  const jwt = await answerToken(found.record, found.request, { approve: false, report: false });
  await withSession(found.record, (token) => answerChallenge({ jwt }, token));
}

/** Focuses a window of the app at `route` (it navigates on its own: js/main.js), or opens one there. */
async function open(route) {
  const existing = (await windows()).find((w) => new URL(w.url).origin === self.location.origin);
  if (existing) {
    existing.postMessage({ type: "open", route });
    await existing.focus();
    return;
  }
  await self.clients.openWindow(`/${route}`);
}

async function closeTagged(tag) {
  for (const n of await self.registration.getNotifications({ tag })) n.close();
}

// The authenticators' device sessions, while this worker runs (it is stopped when idle, and opens new ones).
const sessions = new Map();

/** `request(token)` with the authenticator's device session, opened by signing a fresh nonce with its key. */
async function withSession(record, request) {
  for (let attempt = 0; ; attempt++) {
    let token = sessions.get(record.deviceId);
    if (!token) {
      const issued = await deviceSessionChallenge({ deviceId: record.deviceId });
      const message = await sessionMessage(fromBase64url(issued.challenge), record.deviceId);
      const signature = await signLowS(record.signing.privateKey, message);
      token = (
        await openDeviceSession({ deviceId: record.deviceId, nonce: issued.challenge, signature: base64url(signature) })
      ).token;
      sessions.set(record.deviceId, token);
    }
    try {
      return await request(token);
    } catch (error) {
      sessions.delete(record.deviceId);
      if (attempt > 0 || error?.status !== 401) throw error;
    }
  }
}

/** The authenticator `deviceId` of this browser and its pending request `txn`, verified; or null. */
async function pending(deviceId, txn) {
  const records = await run("authenticators", "readonly", (store) => store.getAll());
  const record = records?.find((r) => r.deviceId === deviceId);
  if (!record?.signing?.privateKey) return null;
  let list;
  try {
    list = await withSession(record, authenticatorChallenges);
  } catch {
    return null;
  }
  for (const { jwt } of list.challenges ?? []) {
    const checked = await verifyChallenge(record, jwt);
    if (checked.request?.txn === txn) return { record, request: checked.request };
  }
  return null;
}
