// Notifications while Countersign is closed (docs/PROTOCOL.md §2.2): the service worker (/sw.js), this
// browser's one Web Push subscription, made with the server's VAPID key, and that subscription registered for
// each device this browser has for the account (its messaging device and, when paired, its authenticator),
// each with its own device session. The worker shows what a push says (../sw.js).
import { ApiError } from "./api.js";
import { fromBase64url } from "./bytes.js";
import { removePushTarget, setPushSubscription, vapidKey } from "./server/notifications.js";
import { workerURL } from "./trusted.js";

const UNSUPPORTED = "This browser cannot show notifications while Countersign is closed.";

export const supported = () =>
  "serviceWorker" in navigator && "PushManager" in globalThis && "Notification" in globalThis;

/** Registers the worker (once per page): it answers pushes even after every page of the app is closed. */
let registering = null;
export function worker() {
  if (!supported()) return Promise.reject(new Error(UNSUPPORTED));
  registering ??= navigator.serviceWorker
    .register(workerURL("/sw.js"), { type: "module", scope: "/" })
    .then(() => navigator.serviceWorker.ready);
  return registering;
}

/** The subscription this browser has, or null. */
async function current() {
  if (!supported() || Notification.permission !== "granted") return null;
  return (await worker()).pushManager.getSubscription();
}

/** "unsupported", "denied" (blocked in the browser's settings), "on", or "off", for the account. */
export async function notificationState(accountId) {
  if (!supported()) return "unsupported";
  if (Notification.permission === "denied") return "denied";
  return (await current().catch(() => null)) && optedIn(accountId) ? "on" : "off";
}

/** Whether pushes reach this browser (cached from the last look): the pages then leave notifying to the
 *  worker, so that one event is one notification. */
let on = false;
export const pushOn = () => on;

/**
 * Asks for the permission, subscribes (or keeps the subscription there is), and registers it for each device
 * of this browser: `devices` are functions that run `request(token)` with a device's session (the messaging
 * device's, the authenticator's). Throws an Error saying what to do when the browser refuses.
 */
export async function turnOn(accountId, devices) {
  if (!supported()) throw new Error(UNSUPPORTED);
  const permission = await Notification.requestPermission();
  if (permission !== "granted") {
    throw new Error(
      permission === "denied"
        ? "Notifications are blocked for this site: allow them in the browser's site settings, then turn them on here."
        : "Notifications were not allowed. Turn them on again and choose Allow.",
    );
  }
  const registration = await worker();
  let subscription = await registration.pushManager.getSubscription();
  if (!subscription) {
    const { publicKey } = await vapidKey();
    try {
      // A browser whose push service does not answer leaves subscribe() pending for ever.
      subscription = await Promise.race([
        registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: fromBase64url(publicKey) }),
        new Promise((_, reject) => setTimeout(() => reject(new Error("no answer in 20 seconds")), 20_000)),
      ]);
    } catch (error) {
      throw new Error(
        "This browser cannot get notifications while Countersign is closed: a private window, or a browser whose " +
          "push service is off or unreachable. Use a normal window, or keep Countersign open (notifications " +
          `still show then). The browser said: ${error?.message ?? error}.`,
      );
    }
  }
  const json = subscription.toJSON();
  await Promise.all(devices.map((withSession) => withSession((token) => setPushSubscription(json, token))));
  optIn(accountId, true);
  on = true;
}

// Which accounts of this browser turned notifications on (one subscription serves every account of the
// profile: another account signing in here is not told through it unless it turns them on too).
const OPT_IN = (accountId) => `countersign notifications ${accountId}`;
function optIn(accountId, yes) {
  try {
    if (yes) localStorage.setItem(OPT_IN(accountId), "on");
    else localStorage.removeItem(OPT_IN(accountId));
  } catch {
    // No storage: the choice lasts for this page.
  }
}
const optedIn = (accountId) => {
  try {
    return localStorage.getItem(OPT_IN(accountId)) === "on";
  } catch {
    return false;
  }
};

/** Removes this browser's target from each of the account's devices (as `turnOn` takes them), then
 *  unsubscribes. */
export async function turnOff(accountId, devices) {
  const subscription = await current().catch(() => null);
  await Promise.all(devices.map((withSession) => withSession((token) => removePushTarget(token))));
  optIn(accountId, false);
  await subscription?.unsubscribe();
  on = false;
}

/** Signing out: the account's devices are told nothing more here (best effort: the sign-out goes on whatever
 *  the server says), and the account's choice is forgotten. The subscription stays for other accounts. */
export async function signingOut(accountId, devices) {
  if (!optedIn(accountId)) return;
  optIn(accountId, false);
  await Promise.allSettled(devices.map((withSession) => withSession((token) => removePushTarget(token))));
}

/** Registers this browser's subscription for a device whose session just opened: a device added (or paired)
 *  after notifications were turned on is told too. Nothing when they are off; failures are left for the
 *  next session (the channel tells the page meanwhile). */
export async function keepRegistered(accountId, deviceToken) {
  const subscription = await current().catch(() => null);
  on = Boolean(subscription) && optedIn(accountId);
  if (!on || !deviceToken) return;
  try {
    await setPushSubscription(subscription.toJSON(), deviceToken);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
  }
}
