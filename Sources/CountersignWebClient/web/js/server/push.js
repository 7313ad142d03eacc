// The server layer: the push channel (docs/openapi.yaml, /v1/push; docs/PROTOCOL.md §2): a ticket for
// its first frame, and the WebSocket itself. ../push.js runs the channel.
import { call } from "../api.js";

export const ENDPOINTS = [
  {
    operationId: "createPushTicket",
    method: "POST",
    path: "/v1/devices/current/push-tickets",
    sends: [],
    answer: "PushTicket",
    reads: ["ticket"],
  },
  // A WebSocket upgrade (101): its frames are PROTOCOL §2's, not an answer.
  { operationId: "pushChannel", method: "GET", path: "/v1/push", answer: null, upgrade: true },
];

/**
 * A single-use ticket for the push channel's first frame (60 seconds).
 * @param {string} deviceToken the device's session
 * @returns {Promise<object>} PushTicket `{ticket, expiresAt}`
 */
export async function createPushTicket(deviceToken) {
  return (await call("POST", "/v1/devices/current/push-tickets", { token: deviceToken, json: {} })).body;
}

/**
 * Opens the push channel's WebSocket on this page's server (wss: under https:), with no credential in its
 * URL: the first frame carries the ticket.
 * @returns {WebSocket}
 */
export function pushChannel() {
  const url = new URL("/v1/push", location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return new WebSocket(url);
}
