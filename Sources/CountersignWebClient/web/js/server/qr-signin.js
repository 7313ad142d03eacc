// The server layer: signing in by QR code (docs/openapi.yaml, /v1/auth-codes): the code this page shows,
// its state while an authenticator claims and approves it, and the session once approved. The code's
// binding secret is the credential of the last two.
import { call, query } from "../api.js";
import { SESSION_READS } from "./sessions.js";

export const ENDPOINTS = [
  {
    operationId: "createAuthCode",
    method: "POST",
    path: "/v1/auth-codes",
    sends: ["userApproval"],
    answer: "AuthCodeCreated",
    reads: ["code", "uri", "expiresAt", "binding"],
  },
  {
    operationId: "authCodeState",
    method: "GET",
    path: "/v1/auth-codes/current",
    answer: "AuthCodeState",
    reads: ["status"],
  },
  {
    operationId: "collectAuthCodeSession",
    method: "POST",
    path: "/v1/auth-codes/current/session",
    answer: "Session",
    reads: SESSION_READS,
  },
];

/**
 * A new sign-in code.
 * @param {{userApproval: "REQUIRED" | "NOT_REQUIRED"}} request AuthCodeRequest
 * @returns {Promise<object>} AuthCodeCreated `{code, uri, expiresAt, binding}`
 */
export async function createAuthCode({ userApproval }) {
  return (await call("POST", "/v1/auth-codes", { json: { userApproval } })).body;
}

/**
 * The code's state; with `wait`, a long poll that answers once it changes or after that many seconds.
 * @param {{wait?: number}} poll seconds to wait (none, or 0: at once)
 * @param {string} binding the code's binding secret
 * @returns {Promise<object>} AuthCodeState `{status, expiresAt}`: PENDING, CLAIMED, COMPLETED, DENIED, EXPIRED
 */
export async function authCodeState({ wait }, binding) {
  return (await call("GET", query("/v1/auth-codes/current", { wait: wait || undefined }), { token: binding })).body;
}

/**
 * The session of an approved code (once).
 * @param {string} binding the code's binding secret
 * @returns {Promise<object>} Session `{token, expiresAt, account}`
 */
export async function collectAuthCodeSession(binding) {
  return (await call("POST", "/v1/auth-codes/current/session", { token: binding })).body;
}
