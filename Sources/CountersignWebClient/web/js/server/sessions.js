// The server layer: account sessions (docs/openapi.yaml, /v1/sessions): signing in with the password,
// signing out, re-authenticating. A passkey's sign-in and re-authentication are in passkeys.js, a second
// factor's transaction in second-factor.js, a QR code's sign-in in qr-signin.js.
import { call } from "../api.js";
import { session } from "../session.js";

/** What this client reads of a Session (session.js keeps it; the screens read its account). */
export const SESSION_READS = [
  "token",
  "expiresAt",
  "account.id",
  "account.username",
  "account.name",
  "account.lastname",
  "account.settings.reauthIntervalMinutes",
];

/** What this client reads of an MFARequired (screens/second-factor.js). */
export const MFA_REQUIRED_READS = [
  "binding",
  "transaction.id",
  "transaction.status",
  "transaction.methods",
  "transaction.numberMatching.number",
  "transaction.attemptsLeft",
  "transaction.failure",
];

export const ENDPOINTS = [
  {
    operationId: "signIn",
    method: "POST",
    path: "/v1/sessions",
    sends: ["username", "password", "captcha", "secondFactor"],
    answer: { 201: "Session", 202: "MFARequired" },
    reads: { 201: SESSION_READS, 202: MFA_REQUIRED_READS },
  },
  { operationId: "signOut", method: "DELETE", path: "/v1/sessions/current", answer: null },
  {
    operationId: "reauthenticate",
    method: "POST",
    path: "/v1/sessions/current/reauth",
    sends: ["password", "captcha", "secondFactor"],
    answer: { 202: "MFARequired", 204: null },
    reads: { 202: MFA_REQUIRED_READS },
  },
];

/**
 * Signs in with the password: a session, or (the account has a second factor) its transaction.
 * @param {{username: string, password: string, captcha?: string, secondFactor?: "push" | "code"}} request
 *   SignInRequest; the captcha when the server asks for one (withCaptcha)
 * @returns {Promise<{status: number, body: object}>} 201 with a Session `{token, expiresAt, account}`, or
 *   202 with an MFARequired `{transaction, binding}`
 */
export function signIn({ username, password, captcha, secondFactor }) {
  return call("POST", "/v1/sessions", { json: { username, password, captcha, secondFactor } });
}

/**
 * Ends an account session.
 * @param {string} [token] the session to end (this page's by default)
 * @returns {Promise<void>} 204
 */
export async function signOut(token = session.token) {
  await call("DELETE", "/v1/sessions/current", { token });
}

/**
 * Re-authenticates a session with the password (and then its second factor, if the account has one).
 * @param {{password: string, captcha?: string, secondFactor?: "push" | "code"}} request
 * @param {string} [token] this page's account session by default
 * @returns {Promise<{status: number, body: object | null}>} 204 (re-authenticated), or 202 with an
 *   MFARequired `{transaction, binding}` bound to this session
 */
export function reauthenticate({ password, captcha, secondFactor }, token = session.token) {
  return call("POST", "/v1/sessions/current/reauth", { token, json: { password, captcha, secondFactor } });
}
