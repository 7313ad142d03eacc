// The server layer: devices (docs/openapi.yaml, /v1/devices, /v1/device-sessions, /v1/users/{username}/devices):
// registering this browser's keys, device sessions, rotation, renaming and revoking, linking (vouching for) a new
// device of the account, endorsing an authenticator as an approver, the key gate's revocation token, and the key
// directory of a user.
import { call } from "../api.js";
import { session } from "../session.js";

const DEVICE_SESSION_READS = ["token", "device.id", "device.name"];

export const ENDPOINTS = [
  {
    operationId: "deviceRegistrationChallenge",
    method: "POST",
    path: "/v1/devices/challenges",
    sends: [],
    answer: "DeviceChallenge",
    reads: ["challenge"],
  },
  {
    operationId: "registerDevice",
    method: "POST",
    path: "/v1/devices",
    sends: ["name", "signingKey", "encryptionKey", "challenge", "signature"],
    answer: "Device",
    reads: ["id"],
  },
  {
    operationId: "listDevices",
    method: "GET",
    path: "/v1/devices",
    answer: "DeviceList",
    reads: [
      "devices[].id",
      "devices[].name",
      "devices[].kind",
      "devices[].signingKey",
      "devices[].signingKeyId",
      "devices[].encryptionKey",
      "devices[].createdAt",
      "devices[].lastSeenAt",
      "devices[].revokedAt",
      "devices[].endorsement.deviceId",
    ],
  },
  {
    operationId: "renameDevice",
    method: "PATCH",
    path: "/v1/devices/{id}",
    sends: ["name"],
    answer: "Device",
    reads: [],
  },
  { operationId: "revokeDevice", method: "DELETE", path: "/v1/devices/{id}", answer: null },
  {
    operationId: "deviceSessionChallenge",
    method: "POST",
    path: "/v1/device-sessions/challenges",
    sends: ["deviceId"],
    answer: "DeviceChallenge",
    reads: ["challenge"],
  },
  {
    operationId: "openDeviceSession",
    method: "POST",
    path: "/v1/device-sessions",
    sends: ["deviceId", "nonce", "signature"],
    answer: "DeviceSession",
    reads: DEVICE_SESSION_READS,
  },
  {
    operationId: "rotateKeys",
    method: "POST",
    path: "/v1/devices/current/keys",
    sends: ["signingKey", "encryptionKey", "oldKeySignature", "newKeySignature"],
    answer: "Device",
    reads: [],
  },
  {
    operationId: "proveKeys",
    method: "PUT",
    path: "/v1/devices/current/key-proof",
    sends: ["challenge", "signature"],
    answer: null,
  },
  {
    operationId: "vouchDevice",
    method: "POST",
    path: "/v1/devices/{id}/vouch",
    sends: ["signingKeyId", "vouchedAt", "signature"],
    answer: "Device",
    reads: [],
  },
  {
    operationId: "endorseApprover",
    method: "POST",
    path: "/v1/devices/{id}/endorsement",
    sends: ["signingKeyId", "endorsedAt", "signature"],
    answer: "Device",
    reads: [],
  },
  {
    operationId: "setDeviceRevocationToken",
    method: "PUT",
    path: "/v1/devices/{id}/revocation-token",
    sends: ["token", "signature"],
    answer: null,
  },
  {
    operationId: "selfRevokeDevice",
    method: "POST",
    path: "/v1/devices/{id}/self-revocation",
    sends: ["token"],
    answer: null,
  },
  {
    operationId: "directory",
    method: "GET",
    path: "/v1/users/{username}/devices",
    answer: "UserDirectory",
    reads: [
      "username",
      "devices[].id",
      "devices[].name",
      "devices[].signingKey",
      "devices[].encryptionKey",
      "devices[].createdAt",
      "history[].deviceId",
      "history[].signingKey",
      "history[].signingKeyId",
      "history[].encryptionKey",
      "history[].rotationSignature",
      "history[].addedAt",
      "history[].retiredAt",
      "history[].vouch.deviceId",
      "history[].vouch.vouchedAt",
      "history[].vouch.signature",
      "history[].keyProof.statement",
      "history[].keyProof.challenge",
      "history[].keyProof.accountId",
      "history[].keyProof.previousSigningKey",
      "history[].keyProof.signature",
    ],
  },
];

/**
 * A challenge to register a new device of the account with (single use, 5 minutes).
 * @param {string} [token] an account session (this page's by default)
 * @returns {Promise<object>} DeviceChallenge `{challenge, expiresAt}`: `challenge` 32 bytes, base64url
 */
export async function deviceRegistrationChallenge(token = session.token) {
  return (await call("POST", "/v1/devices/challenges", { token, json: {} })).body;
}

/**
 * Registers a device: its public keys and their proof of possession (PROTOCOL §1).
 * @param {{name: string, signingKey: string, encryptionKey: string, challenge: string, signature: string}}
 *   request DeviceRegistrationRequest: SPKIs, the challenge and the signature in base64url
 * @param {string} [token] an account session (this page's by default)
 * @returns {Promise<object>} Device `{id, name, kind, signingKeyId, …}`
 */
export async function registerDevice({ name, signingKey, encryptionKey, challenge, signature }, token = session.token) {
  const json = { name, signingKey, encryptionKey, challenge, signature };
  return (await call("POST", "/v1/devices", { token, json })).body;
}

/**
 * The account's devices, revoked ones included, oldest first.
 * @param {string} [token] this page's account session by default
 * @returns {Promise<object>} DeviceList `{devices: [{id, name, kind, signingKeyId, lastSeenAt?, revokedAt?}]}`
 */
export async function listDevices(token = session.token) {
  return (await call("GET", "/v1/devices", { token })).body;
}

/**
 * Renames a device of the account.
 * @param {string} id the device's id
 * @param {{name: string}} request DeviceRenameRequest: 1 to 64 characters
 * @param {string} [token] this page's account session by default
 * @returns {Promise<object>} Device, renamed (not read here)
 */
export async function renameDevice(id, { name }, token = session.token) {
  return (await call("PATCH", `/v1/devices/${encodeURIComponent(id)}`, { token, json: { name } })).body;
}

/**
 * Revokes a device (or unpairs an authenticator). Needs a recent authentication.
 * @param {string} id the device's id
 * @param {string} [token] an account session (this page's by default)
 * @returns {Promise<void>} 204
 */
export async function revokeDevice(id, token = session.token) {
  await call("DELETE", `/v1/devices/${encodeURIComponent(id)}`, { token });
}

/**
 * A nonce to open a device session with (no session needed).
 * @param {{deviceId: string}} request DeviceSessionChallengeRequest
 * @returns {Promise<object>} DeviceChallenge `{challenge, expiresAt}`
 */
export async function deviceSessionChallenge({ deviceId }) {
  return (await call("POST", "/v1/device-sessions/challenges", { json: { deviceId } })).body;
}

/**
 * Opens a device session: the nonce signed with the device's signing key.
 * @param {{deviceId: string, nonce: string, signature: string}} request DeviceSessionRequest (base64url)
 * @returns {Promise<object>} DeviceSession `{token, expiresAt, device: {id, name, …}, username}`
 */
export async function openDeviceSession({ deviceId, nonce, signature }) {
  return (await call("POST", "/v1/device-sessions", { json: { deviceId, nonce, signature } })).body;
}

/**
 * Rotates the device's keys, signed by the old signing key and by the new one (PROTOCOL §1).
 * @param {{signingKey: string, encryptionKey: string, oldKeySignature: string, newKeySignature: string}}
 *   request KeyRotationRequest (base64url)
 * @param {string} deviceToken the device's session
 * @returns {Promise<object>} Device with its new keys (not read here)
 */
export async function rotateKeys({ signingKey, encryptionKey, oldKeySignature, newKeySignature }, deviceToken) {
  const json = { signingKey, encryptionKey, oldKeySignature, newKeySignature };
  return (await call("POST", "/v1/devices/current/keys", { token: deviceToken, json })).body;
}

/**
 * Gives the device's current keys the key proof it was registered without (PROTOCOL §1.3): the registration
 * message over 32 bytes of its choosing, signed by its current signing key.
 * @param {{challenge: string, signature: string}} request KeyProofRequest (base64url)
 * @param {string} deviceToken the device's session
 * @returns {Promise<void>} 204
 */
export async function proveKeys({ challenge, signature }, deviceToken) {
  await call("PUT", "/v1/devices/current/key-proof", { token: deviceToken, json: { challenge, signature } });
}

/**
 * Approves (links) a new device of the account (PROTOCOL §1): this device vouches for the device's keys as the
 * directory lists them, signing DeviceProof.vouchMessage with its current signing key.
 * @param {string} id the new device's id
 * @param {{signingKeyId: string, vouchedAt: number, signature: string}} request DeviceVouchRequest: the key ID
 *   of the device's current signing key (hex), whole seconds since 1970 as signed, r || s low S (base64url)
 * @param {string} deviceToken this device's session (the voucher's)
 * @returns {Promise<object>} Device, with its vouch (not read here)
 */
export async function vouchDevice(id, { signingKeyId, vouchedAt, signature }, deviceToken) {
  const json = { signingKeyId, vouchedAt, signature };
  return (await call("POST", `/v1/devices/${encodeURIComponent(id)}/vouch`, { token: deviceToken, json })).body;
}

/**
 * Lets an authenticator of the account approve new devices (PROTOCOL §1.2): this device endorses its current
 * key, signing DeviceProof.endorsementMessage with its own current signing key.
 * @param {string} id the authenticator's id
 * @param {{signingKeyId: string, endorsedAt: number, signature: string}} request ApproverEndorsementRequest:
 *   the authenticator's current signing key ID (hex), whole seconds since 1970 as signed, r || s low S (base64url)
 * @param {string} deviceToken this device's session (the endorser's)
 * @returns {Promise<object>} Device, with its endorsement (not read here)
 */
export async function endorseApprover(id, { signingKeyId, endorsedAt, signature }, deviceToken) {
  const json = { signingKeyId, endorsedAt, signature };
  return (await call("POST", `/v1/devices/${encodeURIComponent(id)}/endorsement`, { token: deviceToken, json })).body;
}

/**
 * Keeps the hash of the token with which this device's browser may revoke it (the key gate, SPEC §14.5).
 * @param {string} id this device's id
 * @param {{token: string, signature: string}} request DeviceRevocationTokenSetting (base64url)
 * @param {string} [token] this page's account session by default
 * @returns {Promise<void>} 204
 */
export async function setDeviceRevocationToken(id, { token: revocationToken, signature }, token = session.token) {
  const json = { token: revocationToken, signature };
  await call("PUT", `/v1/devices/${encodeURIComponent(id)}/revocation-token`, { token, json });
}

/**
 * Revokes a device with its revocation token (no session: a wiped browser has no key to sign with).
 * @param {string} id the device's id
 * @param {{token: string}} request DeviceRevocationToken: 32 bytes, base64url
 * @returns {Promise<void>} 204
 */
export async function selfRevokeDevice(id, { token }) {
  await call("POST", `/v1/devices/${encodeURIComponent(id)}/self-revocation`, { json: { token } });
}

/**
 * The key directory of a user: active messaging devices with their keys, and every key's history.
 * @param {string} username as the server keeps it (lower case)
 * @param {string} token an account or a device session
 * @returns {Promise<object>} UserDirectory `{username, devices: [{id, name, signingKey, encryptionKey, createdAt}],
 *   history: [{deviceId, signingKey, signingKeyId, encryptionKey?, rotationSignature?, addedAt, retiredAt?,
 *   vouch?: {deviceId, vouchedAt, signature}}]}`
 */
export async function directory(username, token) {
  return (await call("GET", `/v1/users/${encodeURIComponent(username)}/devices`, { token })).body;
}
