// The server layer: this browser as an authenticator (docs/openapi.yaml, /v1/authenticators and
// /v1/authenticator; docs/PROTOCOL.md §3): pairing, the pending push challenges and their answers,
// unpairing, and QR sign-in codes claimed, approved or denied. All but pairing take the authenticator's
// own device session.
import { call } from "../api.js";

const AUTHENTICATION_OBJECT_READS = [
  "status",
  "users[].userId",
  "users[].username",
  "users[].given",
  "users[].family",
  "clientContext.address",
  "clientContext.userAgent",
  "clientContext.time",
];

export const ENDPOINTS = [
  {
    operationId: "pairAuthenticator",
    method: "POST",
    path: "/v1/authenticators",
    sends: ["pairingKey", "name", "signingKey", "encryptionKey", "signature"],
    answer: "PairingInfo",
    reads: [
      "authenticators[].type",
      "authenticators[].status",
      "authenticators[].errorMessage",
      "deviceId",
      "username",
      "session.token",
      "session.device.id",
      "session.device.name",
      ...["kty", "crv", "x", "y", "kid", "alg", "use"].map((field) => `jwks.keys[].${field}`),
      "totp.envelope",
      "totp.algorithm",
      "totp.digits",
      "totp.period",
    ],
  },
  {
    operationId: "authenticatorChallenges",
    method: "GET",
    path: "/v1/authenticator/challenges",
    answer: "PushChallengeList",
    reads: ["challenges[].jwt"],
  },
  {
    operationId: "answerChallenge",
    method: "POST",
    path: "/v1/authenticator/answers",
    sends: ["jwt"],
    answer: "PushAnswerResult",
    reads: ["status"],
  },
  { operationId: "unpairAuthenticator", method: "DELETE", path: "/v1/authenticator", answer: null },
  {
    operationId: "claimAuthCode",
    method: "POST",
    path: "/v1/authenticator/auth-codes",
    sends: ["code"],
    answer: "AuthenticationObject",
    reads: AUTHENTICATION_OBJECT_READS,
  },
  {
    operationId: "approveAuthCode",
    method: "POST",
    path: "/v1/authenticator/auth-codes/approve",
    sends: ["code", "userId"],
    answer: "AuthenticationObject",
    reads: ["status"],
  },
  {
    operationId: "denyAuthCode",
    method: "POST",
    path: "/v1/authenticator/auth-codes/deny",
    sends: ["code"],
    answer: "AuthenticationObject",
    reads: ["status"],
  },
];

/**
 * Pairs a new authenticator with a pairing key (no session: the key is the credential).
 * @param {{pairingKey: string, name: string, signingKey: string, encryptionKey: string, signature: string}}
 *   request PairingRequest: SPKIs and the pairing message's signature in base64url
 * @returns {Promise<object>} PairingInfo `{authenticators: [{type, status, errorMessage?}], deviceId, username,
 *   session: DeviceSession, jwks: {keys: [ChallengeKey]}, totp: {envelope, algorithm, digits, period}}`
 */
export async function pairAuthenticator({ pairingKey, name, signingKey, encryptionKey, signature }) {
  const json = { pairingKey, name, signingKey, encryptionKey, signature };
  return (await call("POST", "/v1/authenticators", { json })).body;
}

/**
 * The authenticator's pending push challenges (those the channel may have missed).
 * @param {string} deviceToken the authenticator's device session
 * @returns {Promise<object>} PushChallengeList `{challenges: [{jwt}]}`
 */
export async function authenticatorChallenges(deviceToken) {
  return (await call("GET", "/v1/authenticator/challenges", { token: deviceToken })).body;
}

/**
 * Approves or denies a push challenge.
 * @param {{jwt: string}} request PushAnswer: the answer's JWS (claims: AnswerClaims)
 * @param {string} deviceToken the authenticator's device session
 * @returns {Promise<object>} PushAnswerResult `{status}`: the transaction's after the answer
 */
export async function answerChallenge({ jwt }, deviceToken) {
  return (await call("POST", "/v1/authenticator/answers", { token: deviceToken, json: { jwt } })).body;
}

/**
 * Unpairs this authenticator: its device is revoked and its sessions end.
 * @param {string} deviceToken the authenticator's device session
 * @returns {Promise<void>} 204
 */
export async function unpairAuthenticator(deviceToken) {
  await call("DELETE", "/v1/authenticator", { token: deviceToken });
}

/**
 * Claims a QR sign-in's code for this authenticator.
 * @param {{code: string}} request AuthCodeClaim: the 8 characters
 * @param {string} deviceToken the authenticator's device session
 * @returns {Promise<object>} AuthenticationObject `{status, users: [{userId, username, given, family}],
 *   clientContext: {address, userAgent, time}}`
 */
export async function claimAuthCode({ code }, deviceToken) {
  return (await call("POST", "/v1/authenticator/auth-codes", { token: deviceToken, json: { code } })).body;
}

/**
 * Approves a claimed code for one of the claim's users.
 * @param {{code: string, userId: string}} request AuthCodeClaim
 * @param {string} deviceToken the authenticator's device session
 * @returns {Promise<object>} AuthenticationObject `{status}`: COMPLETED or EXPIRED
 */
export async function approveAuthCode({ code, userId }, deviceToken) {
  const json = { code, userId };
  return (await call("POST", "/v1/authenticator/auth-codes/approve", { token: deviceToken, json })).body;
}

/**
 * Denies a claimed code.
 * @param {{code: string}} request AuthCodeClaim
 * @param {string} deviceToken the authenticator's device session
 * @returns {Promise<object>} AuthenticationObject `{status}`: DENIED or EXPIRED
 */
export async function denyAuthCode({ code }, deviceToken) {
  return (await call("POST", "/v1/authenticator/auth-codes/deny", { token: deviceToken, json: { code } })).body;
}
