// The server layer: the OpenID Connect provider's answer to the authorization request this page was opened
// with at /oauth2/authorize (docs/openapi.yaml, /v1/oidc; docs/PROTOCOL.md §5.5).
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
