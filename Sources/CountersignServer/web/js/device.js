// The browser as a device (docs/PROTOCOL.md §1): on first sign-in it makes its keys, registers them with
// proof of possession and keeps them; then, and on every later sign-in, it opens a device session by
// signing the server's nonce. The device session's token stays in memory.
import { call } from "./api.js";
import { base64url, fromBase64url } from "./bytes.js";
import { makeDeviceKeys, registrationMessage, sessionMessage, signLowS, spki } from "./device-keys.js";
import { keystore } from "./keystore.js";

function browserName() {
  const ua = navigator.userAgent;
  const brand = /Edg\//.test(ua) ? "Edge" : /Firefox\//.test(ua) ? "Firefox" : /Chrome\//.test(ua) ? "Chrome" : /Safari\//.test(ua) ? "Safari" : "Browser";
  return `${brand} on ${navigator.platform || "the web"}`.slice(0, 64);
}

/** Registers this browser as a device of the signed-in account (keys made here, never sent). */
async function register(accountSession, accountId, report) {
  const keys = await makeDeviceKeys();
  report("Keypair created");
  const signingSpki = await spki(keys.signing.publicKey);
  const encryptionSpki = await spki(keys.encryption.publicKey);
  const { body: issued } = await call("POST", "/v1/devices/challenges", { token: accountSession, json: {} });
  const challenge = fromBase64url(issued.challenge);
  const signature = await signLowS(
    keys.signing.privateKey,
    await registrationMessage(challenge, accountId, signingSpki, encryptionSpki),
  );
  const { body: device } = await call("POST", "/v1/devices", {
    token: accountSession,
    json: {
      name: browserName(),
      signingKey: base64url(signingSpki),
      encryptionKey: base64url(encryptionSpki),
      challenge: issued.challenge,
      signature: base64url(signature),
    },
  });
  const record = { accountId, deviceId: device.id, signing: keys.signing, encryption: keys.encryption, registeredAt: Date.now() };
  await keystore.save(record);
  return record;
}

/** A device session for `record`: the server's nonce signed with the device key. */
async function openSession(record) {
  const { body: issued } = await call("POST", "/v1/device-sessions/challenges", { json: { deviceId: record.deviceId } });
  const nonce = fromBase64url(issued.challenge);
  const signature = await signLowS(record.signing.privateKey, await sessionMessage(nonce, record.deviceId));
  const { body } = await call("POST", "/v1/device-sessions", {
    json: { deviceId: record.deviceId, nonce: issued.challenge, signature: base64url(signature) },
  });
  return body;
}

/** This browser's device for the account, registered on first use; returns it with a device session. */
export async function ensureDevice(accountSession, account, report = () => {}) {
  let record = await keystore.device(account.id);
  if (!record) record = await register(accountSession, account.id, report);
  const deviceSession = await openSession(record);
  return { record, deviceSession };
}

export async function forgetDevice(accountId) {
  await keystore.remove(accountId);
}
