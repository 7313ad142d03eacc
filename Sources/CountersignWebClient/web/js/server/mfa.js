// The server layer: the account's second factors (docs/openapi.yaml, /v1/me/mfa): their status, the
// authenticator app (TOTP), recovery codes, pairing keys for authenticators, number matching, and turning
// it all off. Every change needs a recent full authentication (401 reauthentication-required).
import { call } from "../api.js";
import { session } from "../session.js";

/** What this client reads of an MFAStatus (screens/two-factor.js, ../authenticator.js). */
const STATUS_READS = [
  "enabled",
  "authenticators[].deviceId",
  "authenticators[].name",
  "authenticators[].pairedAt",
  "authenticators[].pushAllowed",
  "totpApp",
  "recoveryCodesLeft",
  "pushSuspended",
  "numberMatching",
  "numberDigits",
];

export const ENDPOINTS = [
  { operationId: "mfaStatus", method: "GET", path: "/v1/me/mfa", answer: "MFAStatus", reads: STATUS_READS },
  { operationId: "disableMFA", method: "DELETE", path: "/v1/me/mfa", answer: null },
  {
    operationId: "updateMFASettings",
    method: "PUT",
    path: "/v1/me/mfa/settings",
    sends: ["numberMatching", "numberDigits"],
    answer: "MFAStatus",
    reads: STATUS_READS,
  },
  {
    operationId: "createPairingKey",
    method: "POST",
    path: "/v1/me/mfa/pairing-keys",
    answer: "PairingKeyResponse",
    reads: ["key", "uri", "expiresAt"],
  },
  {
    operationId: "enrollTOTP",
    method: "POST",
    path: "/v1/me/mfa/totp",
    answer: "TOTPEnrollment",
    reads: ["secret", "uri"],
  },
  {
    operationId: "confirmTOTP",
    method: "POST",
    path: "/v1/me/mfa/totp/confirm",
    sends: ["code"],
    answer: "MFAStatus",
    reads: STATUS_READS,
  },
  {
    operationId: "regenerateRecoveryCodes",
    method: "POST",
    path: "/v1/me/mfa/recovery-codes",
    answer: "RecoveryCodeList",
    reads: ["codes"],
  },
];

/**
 * The account's second factors.
 * @param {string} [token] an account session (this page's by default)
 * @returns {Promise<object>} MFAStatus `{enabled, authenticators: [{deviceId, name, pairedAt, pushAllowed}],
 *   totpApp, recoveryCodesLeft, pushSuspended, numberMatching, numberDigits}`
 */
export async function mfaStatus(token = session.token) {
  return (await call("GET", "/v1/me/mfa", { token })).body;
}

/**
 * Turns the second factor off: every authenticator unpaired, the app and the recovery codes dropped.
 * @param {string} [token] this page's account session by default
 * @returns {Promise<void>} 204
 */
export async function disableMFA(token = session.token) {
  await call("DELETE", "/v1/me/mfa", { token });
}

/**
 * Changes how a push approval shows the number to match.
 * @param {{numberMatching: "ENTER_MANUALLY" | "SELECT_NUMBER", numberDigits: 2 | 6}} request MFASettings
 * @param {string} [token] this page's account session by default
 * @returns {Promise<object>} MFAStatus with the new policy
 */
export async function updateMFASettings({ numberMatching, numberDigits }, token = session.token) {
  return (await call("PUT", "/v1/me/mfa/settings", { token, json: { numberMatching, numberDigits } })).body;
}

/**
 * A pairing key for a new authenticator (single use, 10 minutes).
 * @param {string} [token] an account session (this page's by default)
 * @returns {Promise<object>} PairingKeyResponse `{key, uri, expiresAt}`: 12 characters, and a countersign://pair URI
 */
export async function createPairingKey(token = session.token) {
  return (await call("POST", "/v1/me/mfa/pairing-keys", { token })).body;
}

/**
 * Starts enrolling an authenticator app: a new secret, counted once confirmed.
 * @param {string} [token] this page's account session by default
 * @returns {Promise<object>} TOTPEnrollment `{secret, uri}`: Base32, and an otpauth://totp URI
 */
export async function enrollTOTP(token = session.token) {
  return (await call("POST", "/v1/me/mfa/totp", { token })).body;
}

/**
 * Confirms the authenticator app with one of its codes.
 * @param {{code: string}} request MFACodeRequest: the app's current 6 digits
 * @param {string} [token] this page's account session by default
 * @returns {Promise<object>} MFAStatus, the app enrolled
 */
export async function confirmTOTP({ code }, token = session.token) {
  return (await call("POST", "/v1/me/mfa/totp/confirm", { token, json: { code } })).body;
}

/**
 * Ten new recovery codes; the old ones stop working.
 * @param {string} [token] this page's account session by default
 * @returns {Promise<object>} RecoveryCodeList `{codes}`, shown once
 */
export async function regenerateRecoveryCodes(token = session.token) {
  return (await call("POST", "/v1/me/mfa/recovery-codes", { token })).body;
}
