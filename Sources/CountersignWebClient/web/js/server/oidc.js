// The server layer: the OpenID Connect provider's answers to the authorization and logout requests this page was
// opened with at /oauth2/authorize and /oauth2/logout (docs/openapi.yaml, /v1/oidc; docs/PROTOCOL.md §6).
import { call } from "../api.js";
import { session } from "../session.js";

export const ENDPOINTS = [
  {
    operationId: "oidcAuthorize",
    method: "POST",
    path: "/v1/oidc/authorizations",
    sends: ["parameters", "consent", "signedInSince"],
    answer: { 200: "OIDCAuthorizationAnswer" },
    reads: {
      200: [
        "action", "location", "reason", "need", "since", "clientId", "clientName", "scope", "error", "errorDescription",
      ],
    },
  },
  {
    operationId: "oidcLogout",
    method: "POST",
    path: "/v1/oidc/logouts",
    sends: ["parameters", "signOut"],
    answer: { 200: "OIDCLogoutAnswer" },
    reads: { 200: ["action", "location", "clientName", "otherAccount", "error", "errorDescription"] },
  },
  {
    operationId: "connectedApps",
    method: "GET",
    path: "/v1/me/connected-apps",
    answer: "ConnectedAppList",
    reads: ["apps[].clientId", "apps[].name", "apps[].scope", "apps[].connectedAt"],
  },
  { operationId: "disconnectApp", method: "DELETE", path: "/v1/me/connected-apps/{clientId}", answer: null },
];

/**
 * What to do with an authorization request: go to the client (`redirect`), sign in or step up (`sign-in`),
 * ask for consent (`consent`), or show an error here (`error`).
 * @param {{parameters: string[][], consent?: boolean, signedInSince?: string}} request the query's
 *   [name, value] pairs in order; the person's answer on the consent screen; the `since` of a sign-in asked for
 * @param {string | null} [token] this page's account session, if it has one
 * @returns {Promise<object>} an OIDCAuthorizationAnswer
 */
export async function oidcAuthorize({ parameters, consent, signedInSince }, token = session.token) {
  return (await call("POST", "/v1/oidc/authorizations", { token, json: { parameters, consent, signedInSince } })).body;
}

/**
 * What to do with a logout request (RP-initiated logout): ask first (`confirm`), or, with `signOut`, end this
 * browser's provider session (`signed-out`, then go to `location` if any); or show an error here (`error`).
 * @param {{parameters: string[][], signOut?: boolean}} request the query's [name, value] pairs in order; whether
 *   the person chose to sign out of Countersign too
 * @param {string | null} [token] this page's account session, if it has one
 * @returns {Promise<object>} an OIDCLogoutAnswer
 */
export async function oidcLogout({ parameters, signOut }, token = session.token) {
  return (await call("POST", "/v1/oidc/logouts", { token, json: { parameters, signOut } })).body;
}

/**
 * The applications this account allowed (Settings → Connected apps).
 * @param {string} [token] this page's account session by default
 * @returns {Promise<{apps: object[]}>} ConnectedAppList
 */
export async function connectedApps(token = session.token) {
  return (await call("GET", "/v1/me/connected-apps", { token })).body;
}

/**
 * Disconnects an application: its consent forgotten, its tokens ended.
 * @param {string} clientId the application's client ID
 * @param {string} [token] this page's account session by default
 * @returns {Promise<void>} 204
 */
export async function disconnectApp(clientId, token = session.token) {
  await call("DELETE", `/v1/me/connected-apps/${encodeURIComponent(clientId)}`, { token });
}
