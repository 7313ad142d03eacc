// Key directories as the server lists them (GET /v1/users/{name}/devices), made here with real keys and real
// proofs (PROTOCOL §1.1–§1.3), for the tests of pins.js and of what opens under them.
import { base64url } from "../../../Sources/CountersignWebClient/web/js/bytes.js";
import {
  keyIdOf,
  registrationMessage,
  rotationMessage,
  signLowS,
} from "../../../Sources/CountersignWebClient/web/js/device-keys.js";
import { keyPair } from "./vectors.mjs";

export const T0 = 1_800_000_000_000; // ms: KeyPinsTests' t0
export const at = (seconds) => T0 + seconds * 1000;
export const iso = (ms) => new Date(ms).toISOString();

/** A device's keys: a signing pair and an encryption pair, with their SPKIs and key IDs. */
export async function deviceKeys() {
  const signing = await keyPair("ECDSA");
  const encryption = await keyPair("ECDH");
  return { signing, encryption, signingId: await keyIdOf(signing.spki), encryptionId: await keyIdOf(encryption.spki) };
}

/** `dir` with the one device of `other` (a directory of the same user) added, its key history with it. */
export function addDevice(dir, other) {
  dir.devices.push({ ...other.devices[0] });
  dir.history.push(...other.history);
  return dir;
}

/** Key `i`'s own proof (PROTOCOL §1.3), signed by `signer` (the key itself unless given): the registration for
 *  the first key, the rotation from the one before for the rest. */
export async function keyProof(id, keys, i, signer = keys[i]) {
  const k = keys[i];
  if (i === 0) {
    const challenge = new Uint8Array(32).fill(7);
    const message = await registrationMessage(challenge, "acct", k.signing.spki, k.encryption.spki);
    const signature = base64url(await signLowS(signer.signing.privateKey, message));
    return { statement: "registration", challenge: base64url(challenge), accountId: "acct", signature };
  }
  const message = await rotationMessage(id, keys[i - 1].signing.spki, k.signing.spki, k.encryption.spki);
  const signature = base64url(await signLowS(signer.signing.privateKey, message));
  return { statement: "rotation", previousSigningKey: base64url(keys[i - 1].signing.spki), signature };
}

/** The directory of `username` with one device `id` whose keys went through `keys` at `times` (seconds),
 *  each rotation signed by the key before unless `forged` names a step signed by `forger`. */
export async function directory(username, id, keys, times, { forged = -1, forger = null } = {}) {
  const history = [];
  for (const [i, k] of keys.entries()) {
    let rotationSignature;
    if (i > 0) {
      const signer = i === forged ? forger : keys[i - 1];
      const message = await rotationMessage(id, keys[i - 1].signing.spki, k.signing.spki, k.encryption.spki);
      rotationSignature = base64url(await signLowS(signer.signing.privateKey, message));
    }
    history.push({
      keyProof: await keyProof(id, keys, i),
      deviceId: id,
      signingKeyId: k.signingId,
      encryptionKeyId: k.encryptionId,
      signingKey: base64url(k.signing.spki),
      encryptionKey: base64url(k.encryption.spki),
      addedAt: iso(at(times[i])),
      retiredAt: i + 1 < keys.length ? iso(at(times[i + 1])) : null,
      rotationSignature,
    });
  }
  const last = keys[keys.length - 1];
  const device = {
    id,
    name: "laptop",
    signingKey: base64url(last.signing.spki),
    signingKeyId: last.signingId,
    encryptionKey: base64url(last.encryption.spki),
    encryptionKeyId: last.encryptionId,
  };
  return { username, devices: [device], history };
}

