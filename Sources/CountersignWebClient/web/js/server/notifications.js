// The server layer: this browser's Web Push subscription as a device's push target (docs/openapi.yaml,
// /v1/devices/current/push-subscription and /v1/devices/current/push-target; docs/PROTOCOL.md §2.1–2.2), and
// the server's VAPID key to subscribe with. ../web-push.js subscribes; each device registers the one
// subscription with its own device session.
import { call } from "../api.js";

export const ENDPOINTS = [
  {
    operationId: "vapidKey",
    method: "GET",
    path: "/v1/push/vapid-key",
    answer: "VAPIDPublicKey",
    reads: ["publicKey"],
  },
  {
    operationId: "setPushSubscription",
    method: "PUT",
    path: "/v1/devices/current/push-subscription",
    sends: ["endpoint", "keys"],
    answer: "PushTargetInfo",
    reads: ["channel", "origin"],
  },
  {
    operationId: "pushTarget",
    method: "GET",
    path: "/v1/devices/current/push-target",
    answer: "PushTargetInfo",
    reads: ["channel", "origin"],
  },
  { operationId: "removePushTarget", method: "DELETE", path: "/v1/devices/current/push-target", answer: null },
];

/**
 * The server's VAPID public key, PushManager.subscribe's `applicationServerKey` (no session).
 * @returns {Promise<object>} VAPIDPublicKey `{publicKey}`: base64url, 65 bytes
 */
export async function vapidKey() {
  return (await call("GET", "/v1/push/vapid-key")).body;
}

/**
 * Makes this browser's subscription the device's push target.
 * @param {{endpoint: string, keys: {p256dh: string, auth: string}}} subscription WebPushSubscription, as
 *   PushSubscription.toJSON() gives it
 * @param {string} deviceToken the device's session
 * @returns {Promise<object>} PushTargetInfo `{channel, origin, createdAt}`
 */
export async function setPushSubscription({ endpoint, keys }, deviceToken) {
  const json = { endpoint, keys: { p256dh: keys.p256dh, auth: keys.auth } };
  return (await call("PUT", "/v1/devices/current/push-subscription", { token: deviceToken, json })).body;
}

/**
 * The device's push target.
 * @param {string} deviceToken the device's session
 * @returns {Promise<object>} PushTargetInfo `{channel, origin, createdAt}` (404 when it has none)
 */
export async function pushTarget(deviceToken) {
  return (await call("GET", "/v1/devices/current/push-target", { token: deviceToken })).body;
}

/**
 * Stops the server notifying the device while it is not connected (204 whether or not it had a target).
 * @param {string} deviceToken the device's session
 * @returns {Promise<void>} 204
 */
export async function removePushTarget(deviceToken) {
  await call("DELETE", "/v1/devices/current/push-target", { token: deviceToken });
}
