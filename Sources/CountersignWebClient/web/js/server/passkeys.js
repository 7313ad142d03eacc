// The server layer: passkeys (docs/openapi.yaml, /v1/me/passkeys, /v1/sessions/passkey and
// /v1/sessions/current/reauth/passkey; docs/PROTOCOL.md §5): the account's list, registering, renaming and
// removing one, and signing in or re-authenticating with one. Options and answers are WebAuthn's JSON;
// ../passkeys.js runs the ceremonies. A second factor's passkey is in second-factor.js.
import { call } from "../api.js";
import { session } from "../session.js";
import { SESSION_READS } from "./sessions.js";

export const ENDPOINTS = [
  {
    operationId: "listPasskeys",
    method: "GET",
    path: "/v1/me/passkeys",
    answer: "PasskeyList",
    reads: ["id", "credentialId", "name", "aaguid", "synced", "backedUp", "createdAt", "lastUsedAt", "prfSalt"].map(
      (field) => `passkeys[].${field}`,
    ),
  },
  {
    operationId: "startPasskeyRegistration",
    method: "POST",
    path: "/v1/me/passkeys/options",
    answer: "PasskeyRegistrationStart",
    reads: ["ceremonyId", "publicKey"],
  },
  {
    operationId: "registerPasskey",
    method: "POST",
    path: "/v1/me/passkeys",
    sends: ["ceremonyId", "name", "credential"],
    answer: "PasskeySummary",
    reads: ["name"],
  },
  {
    operationId: "renamePasskey",
    method: "PATCH",
    path: "/v1/me/passkeys/{id}",
    sends: ["name"],
    answer: "PasskeySummary",
    reads: [],
  },
  { operationId: "removePasskey", method: "DELETE", path: "/v1/me/passkeys/{id}", answer: null },
  {
    operationId: "startPasskeySignIn",
    method: "POST",
    path: "/v1/sessions/passkey/options",
    answer: "PasskeyAssertionStart",
    reads: ["ceremonyId", "publicKey"],
  },
  {
    operationId: "passkeySignIn",
    method: "POST",
    path: "/v1/sessions/passkey",
    sends: ["ceremonyId", "credential"],
    answer: "Session",
    reads: SESSION_READS,
  },
  {
    operationId: "startPasskeyReauth",
    method: "POST",
    path: "/v1/sessions/current/reauth/passkey/options",
    answer: "PasskeyAssertionStart",
    reads: ["ceremonyId", "publicKey", "publicKey.allowCredentials[].id"],
  },
  {
    operationId: "passkeyReauth",
    method: "POST",
    path: "/v1/sessions/current/reauth/passkey",
    sends: ["ceremonyId", "credential"],
    answer: null,
  },
];

/**
 * The account's passkeys, oldest first.
 * @param {string} [token] this page's account session by default
 * @returns {Promise<object>} PasskeyList `{passkeys: [PasskeySummary {id, credentialId, name, aaguid, synced,
 *   backedUp, createdAt, lastUsedAt?, prfSalt}]}`
 */
export async function listPasskeys(token = session.token) {
  return (await call("GET", "/v1/me/passkeys", { token })).body;
}

/**
 * Starts registering a passkey. Needs a recent authentication.
 * @param {string} [token] this page's account session by default
 * @returns {Promise<object>} PasskeyRegistrationStart `{ceremonyId, publicKey}` (WebAuthn's creation options)
 */
export async function startPasskeyRegistration(token = session.token) {
  return (await call("POST", "/v1/me/passkeys/options", { token })).body;
}

/**
 * Registers the passkey the browser made for the options.
 * @param {{ceremonyId: string, name: string, credential: object}} request PasskeyRegistrationFinish: the
 *   credential's RegistrationResponseJSON, without its extension outputs (credentialForServer)
 * @param {string} [token] this page's account session by default
 * @returns {Promise<object>} PasskeySummary `{id, credentialId, name, …}`
 */
export async function registerPasskey({ ceremonyId, name, credential }, token = session.token) {
  return (await call("POST", "/v1/me/passkeys", { token, json: { ceremonyId, name, credential } })).body;
}

/**
 * Renames a passkey of the account.
 * @param {string} id the passkey's id (PasskeySummary.id)
 * @param {{name: string}} request PasskeyRename: 1 to 64 characters
 * @param {string} [token] this page's account session by default
 * @returns {Promise<object>} PasskeySummary, renamed (not read here)
 */
export async function renamePasskey(id, { name }, token = session.token) {
  return (await call("PATCH", `/v1/me/passkeys/${encodeURIComponent(id)}`, { token, json: { name } })).body;
}

/**
 * Removes a passkey of the account. Needs a recent authentication.
 * @param {string} id the passkey's id (PasskeySummary.id)
 * @param {string} [token] this page's account session by default
 * @returns {Promise<void>} 204
 */
export async function removePasskey(id, token = session.token) {
  await call("DELETE", `/v1/me/passkeys/${encodeURIComponent(id)}`, { token });
}

/**
 * Options for a sign-in by a discoverable passkey (no username: the passkey names the account).
 * @returns {Promise<object>} PasskeyAssertionStart `{ceremonyId, publicKey}` (PublicKeyCredentialRequestOptionsJSON)
 */
export async function startPasskeySignIn() {
  return (await call("POST", "/v1/sessions/passkey/options")).body;
}

/**
 * Signs in with the passkey's answer to the options.
 * @param {{ceremonyId: string, credential: object}} assertion PasskeyAssertionFinish
 * @returns {Promise<object>} Session `{token, expiresAt, account}`
 */
export async function passkeySignIn({ ceremonyId, credential }) {
  return (await call("POST", "/v1/sessions/passkey", { json: { ceremonyId, credential } })).body;
}

/**
 * Starts re-authenticating a session with one of the account's passkeys (409 no-passkeys without any).
 * @param {string} [token] this page's account session by default
 * @returns {Promise<object>} PasskeyAssertionStart `{ceremonyId, publicKey: {allowCredentials: [{id}], …}}`
 */
export async function startPasskeyReauth(token = session.token) {
  return (await call("POST", "/v1/sessions/current/reauth/passkey/options", { token })).body;
}

/**
 * Re-authenticates the session with the passkey's answer (in place of the password and second factor).
 * @param {{ceremonyId: string, credential: object}} assertion PasskeyAssertionFinish
 * @param {string} [token] this page's account session by default
 * @returns {Promise<void>} 204
 */
export async function passkeyReauth({ ceremonyId, credential }, token = session.token) {
  await call("POST", "/v1/sessions/current/reauth/passkey", { token, json: { ceremonyId, credential } });
}
