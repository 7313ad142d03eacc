// The server layer: accounts (docs/openapi.yaml, /v1/accounts and /v1/me). Each function is one endpoint,
// named after its operationId; ENDPOINTS lists them with the answer's schema and the fields this client
// reads of it, which Tests/WebUnit/server-layer.test.mjs checks against openapi.yaml.
import { SignedOutError, call, namesNoSession, query } from "../api.js";
import { session } from "../session.js";

export const ENDPOINTS = [
  {
    operationId: "register",
    method: "POST",
    path: "/v1/accounts",
    sends: ["username", "password", "name", "lastname", "captcha", "signIn"],
    answer: "Account | Session",
    reads: ["token", "expiresAt", "account.username"],
  },
  { operationId: "me", method: "GET", path: "/v1/me", answer: "Account", reads: [] },
  {
    operationId: "changePassword",
    method: "PUT",
    path: "/v1/me/password",
    sends: ["currentPassword", "newPassword"],
    answer: null,
  },
  {
    operationId: "updateSettings",
    method: "PUT",
    path: "/v1/me/settings",
    sends: ["reauthIntervalMinutes"],
    answer: "Settings",
    reads: ["reauthIntervalMinutes"],
  },
  {
    operationId: "audit",
    method: "GET",
    path: "/v1/me/audit",
    answer: "AuditPage",
    reads: ["events[].at", "events[].kind", "events[].outcome", "events[].address", "next"],
  },
];

/**
 * Creates an account; with `signIn` the answer is its first session, so one captcha serves both. The captcha
 * when the server asks for one (withCaptcha).
 * @param {{username: string, password: string, name: string, lastname: string, captcha?: string,
 *   signIn?: boolean}} request RegisterRequest
 * @returns {Promise<object>} Account, or with `signIn` a Session `{token, expiresAt, account}`
 */
export async function register({ username, password, name, lastname, captcha, signIn = false }) {
  const json = { username, password, name, lastname, captcha, ...(signIn ? { signIn: true } : {}) };
  return (await call("POST", "/v1/accounts", { json })).body;
}

/**
 * The signed-in account.
 * @param {string} [token] an account session (this page's by default)
 * @returns {Promise<object>} Account `{id, username, name, lastname, settings, createdAt}`
 */
export async function me(token = session.token) {
  return (await call("GET", "/v1/me", { token })).body;
}

/**
 * Changes the password; the server ends the account's other sessions. Needs a recent authentication.
 * @param {{currentPassword: string, newPassword: string}} request
 * @param {string} [token] this page's account session by default
 * @returns {Promise<void>} 204
 */
export async function changePassword({ currentPassword, newPassword }, token = session.token) {
  await call("PUT", "/v1/me/password", { token, json: { currentPassword, newPassword } });
}

/**
 * Changes the re-authentication interval. Needs a recent authentication.
 * @param {{reauthIntervalMinutes: number}} settings Settings: one of rules.js REAUTH_CHOICES
 * @param {string} [token] this page's account session by default
 * @returns {Promise<object>} Settings `{reauthIntervalMinutes}`, as the server now keeps them
 */
export async function updateSettings({ reauthIntervalMinutes }, token = session.token) {
  return (await call("PUT", "/v1/me/settings", { token, json: { reauthIntervalMinutes } })).body;
}

/**
 * One page of the account's audit log, newest first: the first page of `limit` events, or the page at
 * `next`, the path the server gave with the page before (AuditPage.next), followed as it is.
 * @param {{limit?: number, next?: string | null}} page
 * @param {string} [token] this page's account session by default
 * @returns {Promise<object>} AuditPage `{events: [{at, kind, outcome, address}], next?}`
 */
export async function audit({ limit, next = null }, token = session.token) {
  return (await call("GET", next ?? query("/v1/me/audit", { limit }), { token })).body;
}

/**
 * Asks the server whether this page's account session still exists, before a device session is renewed
 * after the server closed the push channel: a sign-out everywhere, a password change or a lock ends both,
 * and the page must not go on receiving or approving with its device key as if signed in. When it has
 * ended this throws SignedOutError (and `call` has told main.js, which signs out); any other failure (the
 * network) lets the renewal go on and find out for itself.
 */
export async function requireAccountSession() {
  const token = session.token;
  if (!token) throw new SignedOutError();
  try {
    await me(token);
  } catch (error) {
    if (namesNoSession(error)) throw new SignedOutError();
  }
}
