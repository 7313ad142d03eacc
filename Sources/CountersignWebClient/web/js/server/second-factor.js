// The server layer: a sign-in's (or a re-authentication's) second factor, the transaction of an
// MFARequired answer (docs/openapi.yaml, /v1/mfa/transactions/{id}). Every call carries the transaction's
// binding secret, which only the client that sent the password holds.
import { call, query } from "../api.js";
import { SESSION_READS } from "./sessions.js";

/** What this client reads of an MFATransactionView (screens/second-factor.js). */
const VIEW_READS = ["status", "methods", "numberMatching.number", "attemptsLeft", "failure"];

export const ENDPOINTS = [
  {
    operationId: "mfaTransaction",
    method: "GET",
    path: "/v1/mfa/transactions/{id}",
    answer: "MFATransactionView",
    reads: VIEW_READS,
  },
  {
    operationId: "submitMFAPasscode",
    method: "POST",
    path: "/v1/mfa/transactions/{id}/otp",
    sends: ["code"],
    answer: "MFATransactionView",
    reads: VIEW_READS,
  },
  {
    operationId: "submitMFARecoveryCode",
    method: "POST",
    path: "/v1/mfa/transactions/{id}/recovery-code",
    sends: ["code"],
    answer: "MFATransactionView",
    reads: VIEW_READS,
  },
  {
    operationId: "startMFAPasskey",
    method: "POST",
    path: "/v1/mfa/transactions/{id}/passkey/options",
    answer: "PasskeyAssertionStart",
    reads: ["ceremonyId", "publicKey"],
  },
  {
    operationId: "submitMFAPasskey",
    method: "POST",
    path: "/v1/mfa/transactions/{id}/passkey",
    sends: ["ceremonyId", "credential"],
    answer: "MFATransactionView",
    reads: VIEW_READS,
  },
  {
    operationId: "collectMFASession",
    method: "POST",
    path: "/v1/mfa/transactions/{id}/session",
    answer: { 201: "Session", 204: null },
    reads: { 201: SESSION_READS },
  },
];

/**
 * The transaction as the signing-in client sees it; with `wait`, a long poll that answers once its status
 * changes or after that many seconds.
 * @param {string} id the transaction's id
 * @param {{wait?: number}} poll seconds to wait (none: at once)
 * @param {string} binding the transaction's binding secret
 * @returns {Promise<object>} MFATransactionView `{status, methods, numberMatching?, attemptsLeft?, failure?}`
 */
export async function mfaTransaction(id, { wait }, binding) {
  const path = query(`/v1/mfa/transactions/${encodeURIComponent(id)}`, { wait: wait || undefined });
  return (await call("GET", path, { token: binding })).body;
}

/**
 * A one-time passcode for the transaction.
 * @param {string} id the transaction's id
 * @param {string} code MFACodeRequest's `code`: 6 digits
 * @param {string} binding the transaction's binding secret
 * @returns {Promise<object>} MFATransactionView after the code (`attemptsLeft` one lower when wrong)
 */
export async function submitMFAPasscode(id, code, binding) {
  const path = `/v1/mfa/transactions/${encodeURIComponent(id)}/otp`;
  return (await call("POST", path, { token: binding, json: { code } })).body;
}

/**
 * A recovery code for the transaction (spent when right).
 * @param {string} id the transaction's id
 * @param {string} code MFACodeRequest's `code`
 * @param {string} binding the transaction's binding secret
 * @returns {Promise<object>} MFATransactionView after the code
 */
export async function submitMFARecoveryCode(id, code, binding) {
  const path = `/v1/mfa/transactions/${encodeURIComponent(id)}/recovery-code`;
  return (await call("POST", path, { token: binding, json: { code } })).body;
}

/**
 * Starts finishing the transaction with a passkey.
 * @param {string} id the transaction's id
 * @param {string} binding the transaction's binding secret
 * @returns {Promise<object>} PasskeyAssertionStart `{ceremonyId, publicKey}` (PublicKeyCredentialRequestOptionsJSON)
 */
export async function startMFAPasskey(id, binding) {
  const path = `/v1/mfa/transactions/${encodeURIComponent(id)}/passkey/options`;
  return (await call("POST", path, { token: binding })).body;
}

/**
 * The passkey's answer for the transaction.
 * @param {string} id the transaction's id
 * @param {{ceremonyId: string, credential: object}} assertion PasskeyAssertionFinish
 * @param {string} binding the transaction's binding secret
 * @returns {Promise<object>} MFATransactionView after the assertion (COMPLETED, or fewer attempts left)
 */
export async function submitMFAPasskey(id, { ceremonyId, credential }, binding) {
  const path = `/v1/mfa/transactions/${encodeURIComponent(id)}/passkey`;
  return (await call("POST", path, { token: binding, json: { ceremonyId, credential } })).body;
}

/**
 * Collects a completed transaction: a sign-in's session, or a re-authentication's confirmation.
 * @param {string} id the transaction's id
 * @param {string} binding the transaction's binding secret
 * @returns {Promise<{status: number, body: object | null}>} 201 with a Session `{token, expiresAt, account}`
 *   (a sign-in), or 204 (a re-authentication: the session that asked counts as fresh)
 */
export function collectMFASession(id, binding) {
  return call("POST", `/v1/mfa/transactions/${encodeURIComponent(id)}/session`, { token: binding });
}
