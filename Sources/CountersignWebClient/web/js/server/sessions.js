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
    operationId: "bindSession",
    method: "PUT",
    path: "/v1/sessions/current/binding",
    sends: ["publicKey", "deviceId", "signature"],
    answer: { 200: "SessionBinding" },
    reads: { 200: ["id", "deviceId", "idleSeconds", "nextNonce.challenge", "nextNonce.expiresAt"] },
  },
  {
    operationId: "sessionResumptionChallenge",
    method: "POST",
    path: "/v1/session-resumptions/challenges",
    sends: ["bindingId"],
    answer: { 201: "DeviceChallenge" },
    reads: { 201: ["challenge"] },
  },
  {
    operationId: "resumeSession",
    method: "POST",
    path: "/v1/session-resumptions",
    sends: ["bindingId", "nonce", "signature"],
    answer: { 201: "Session" },
    reads: { 201: [...SESSION_READS, "authenticatedAt", "nextNonce.challenge", "nextNonce.expiresAt"] },
  },
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

/**
 * Binds a key this browser holds to this page's session, so a reload can resume it (PROTOCOL §1.1).
 * @param {{publicKey: string, deviceId?: string, signature: string}} request SessionBindingRequest (base64url)
 * @param {string} [token] this page's account session by default
 * @returns {Promise<{id: string, deviceId?: string, idleSeconds: number}>} the SessionBinding
 */
export async function bindSession({ publicKey, deviceId, signature }, token = session.token) {
  return (await call("PUT", "/v1/sessions/current/binding", { token, json: { publicKey, deviceId, signature } })).body;
}

/**
 * A nonce to resume a session with the bound key.
 * @param {string} bindingId
 * @returns {Promise<{challenge: string}>} a DeviceChallenge (base64url)
 */
export async function sessionResumptionChallenge(bindingId) {
  return (await call("POST", "/v1/session-resumptions/challenges", { json: { bindingId } })).body;
}

/**
 * Resumes an account session: the nonce signed by the bound key.
 * @param {{bindingId: string, nonce: string, signature: string}} request SessionResumptionRequest
 * @returns {Promise<{token: string, expiresAt: string, account: object}>} a Session
 */
export async function resumeSession({ bindingId, nonce, signature }) {
  return (await call("POST", "/v1/session-resumptions", { json: { bindingId, nonce, signature } })).body;
}
