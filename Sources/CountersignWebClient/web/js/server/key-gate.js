// The server layer: the key gate's audit (docs/openapi.yaml, /v1/me/key-gate/events). The gate itself is
// this browser's (../gate.js); the server only records what the browser says it did.
import { call } from "../api.js";
import { session } from "../session.js";

export const ENDPOINTS = [
  {
    operationId: "recordKeyGateEvent",
    method: "POST",
    path: "/v1/me/key-gate/events",
    sends: ["event", "method"],
    answer: null,
  },
];

/**
 * Writes a key gate event to the account's audit log.
 * @param {{event: string, method: "prf" | "password"}} request KeyGateEvent: `event` is enabled, disabled,
 *   unlocked, unlock-failed, wiped, method-added or method-removed
 * @param {string} [token] this page's account session by default
 * @returns {Promise<void>} 204
 */
export async function recordKeyGateEvent({ event, method }, token = session.token) {
  await call("POST", "/v1/me/key-gate/events", { token, json: { event, method } });
}
