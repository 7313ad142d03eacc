// The server layer: the message relay (docs/openapi.yaml, /v1/messages, /v1/messages/{id},
// /v1/devices/current/messages and /acks), with a device session. The push channel that carries the same
// queue is push.js.
import { call, query } from "../api.js";

/** What this client reads of a QueuedMessage (../messages.js stores it, ../push.js acknowledges it). */
export const QUEUED_MESSAGE_READS = [
  "seq",
  "id",
  "direction",
  "from",
  "fromDevice",
  "to",
  "envelope",
  "acceptedAt",
  "deliverAt",
];

export const ENDPOINTS = [
  {
    operationId: "sendMessage",
    method: "POST",
    path: "/v1/messages",
    sends: ["to", "envelope", "deliverAfter"],
    answer: "SentMessage",
    reads: [],
  },
  {
    operationId: "messageStatus",
    method: "GET",
    path: "/v1/messages/{id}",
    answer: "MessageStatus",
    reads: ["recipientDevices", "acknowledgedBy", "deliverAt", "cancelled"],
  },
  {
    operationId: "fetchMessages",
    method: "GET",
    path: "/v1/devices/current/messages",
    answer: "MessagePage",
    reads: QUEUED_MESSAGE_READS.map((field) => `messages[].${field}`),
  },
  {
    operationId: "acknowledgeMessages",
    method: "POST",
    path: "/v1/devices/current/acks",
    sends: ["seqs"],
    answer: "AckResult",
    reads: [],
  },
];

/**
 * Sends one envelope, sealed to exactly the active devices of every recipient and of the sender.
 * @param {{to: string[], envelope: string, deliverAfter?: number}} request SendMessageRequest: usernames,
 *   the envelope in base64url, seconds to hold it
 * @param {string} deviceToken the sending device's session
 * @returns {Promise<object>} SentMessage `{id, acceptedAt, deliverAt, recipientDevices}` (not read here)
 */
export async function sendMessage({ to, envelope, deliverAfter }, deviceToken) {
  return (await call("POST", "/v1/messages", { token: deviceToken, json: { to, envelope, deliverAfter } })).body;
}

/**
 * The delivery state of a message this account sent: how many recipient devices stored it (their
 * acknowledgements; the sender's own devices are not counted).
 * @param {string} id the message's ID (32 hex digits)
 * @param {string} deviceToken a device session of the sending account
 * @returns {Promise<object>} MessageStatus `{id, to, acceptedAt, deliverAt, recipientDevices, fetchedBy,
 *   acknowledgedBy, cancelled}`
 */
export async function messageStatus(id, deviceToken) {
  return (await call("GET", `/v1/messages/${encodeURIComponent(id)}`, { token: deviceToken })).body;
}

/**
 * The device's due, unacknowledged messages, oldest first; with `wait`, a long poll.
 * @param {{after: number, wait?: number}} page the queue position to start after; seconds to wait
 * @param {string} deviceToken the device's session
 * @returns {Promise<object>} MessagePage `{messages: [QueuedMessage {seq, id, direction, from, fromDevice, to,
 *   envelope, acceptedAt, deliverAt}]}`
 */
export async function fetchMessages({ after, wait }, deviceToken) {
  return (await call("GET", query("/v1/devices/current/messages", { after, wait }), { token: deviceToken })).body;
}

/**
 * Acknowledges stored messages: the server deletes those queue entries.
 * @param {{seqs: number[]}} request AckRequest: queue positions
 * @param {string} deviceToken the device's session
 * @returns {Promise<object>} AckResult `{acknowledged}` (not read here)
 */
export async function acknowledgeMessages({ seqs }, deviceToken) {
  return (await call("POST", "/v1/devices/current/acks", { token: deviceToken, json: { seqs } })).body;
}
