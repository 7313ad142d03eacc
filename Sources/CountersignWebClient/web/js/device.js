// The browser as a device (docs/PROTOCOL.md §1): on first sign-in it makes its keys, keeps them, then
// registers them with proof of possession; then, and on every later sign-in, it opens a device session
// by signing the server's nonce. The device session's token stays in memory.
import { ApiError } from "./api.js";
import { base64url, fromBase64url } from "./bytes.js";
import { makeDeviceKeys, registrationMessage, rotationMessage, sessionMessage, signLowS, spki } from "./device-keys.js";
import { fileKeys } from "./file-keys.js";
import { LockedError, lock } from "./gate-keys.js";
import { WIPED_WORDS } from "./gate-rules.js";
import { keystore } from "./keystore.js";
import { deviceName } from "./user-agent.js";
import {
  deviceRegistrationChallenge,
  deviceSessionChallenge,
  directory,
  listDevices,
  openDeviceSession,
  proveKeys,
  registerDevice,
  revokeDevice,
  rotateKeys,
} from "./server/devices.js";
import { wipeDevice } from "./wipe.js";

/** Registers the record's keys as a device of the signed-in account (the keys never leave). */
async function register(accountSession, record) {
  const signingSpki = await spki(record.signing.publicKey);
  const encryptionSpki = await spki(record.encryption.publicKey);
  // "Chrome on Linux", numbered when the account has one of that name already (a second profile, say).
  const taken = await listDevices(accountSession)
    .then(({ devices }) => devices.filter((d) => !d.revokedAt).map((d) => d.name))
    .catch(() => []);
  const issued = await deviceRegistrationChallenge(accountSession);
  const signature = await signLowS(
    record.signing.privateKey,
    await registrationMessage(fromBase64url(issued.challenge), record.accountId, signingSpki, encryptionSpki),
  );
  const device = await registerDevice(
    {
      name: deviceName(navigator.userAgent, navigator.platform, taken),
      signingKey: base64url(signingSpki),
      encryptionKey: base64url(encryptionSpki),
      challenge: issued.challenge,
      signature: base64url(signature),
    },
    accountSession,
  );
  return device.id;
}

/** A device session for `record` (a device's or an authenticator's): the server's nonce signed with its key. */
export async function openSession(record) {
  if (!record.signing.privateKey) throw new LockedError();
  const issued = await deviceSessionChallenge({ deviceId: record.deviceId });
  const signature = await signLowS(
    record.signing.privateKey,
    await sessionMessage(fromBase64url(issued.challenge), record.deviceId),
  );
  return openDeviceSession({ deviceId: record.deviceId, nonce: issued.challenge, signature: base64url(signature) });
}

/** Runs `body` while holding this browser's lock for the account: two tabs never register twice. */
function exclusively(accountId, body) {
  return navigator.locks ? navigator.locks.request(`countersign device ${accountId}`, body) : body();
}

/**
 * This browser's device for the account, registered on first use, and a device session for it:
 * {record, deviceSession, created}, `created` true only when this call made the keys. The keys are
 * stored before they are registered, so a tab closed halfway leaves keys that the next sign-in
 * registers, never a registered device whose keys are gone.
 */
export function ensureDevice(accountSession, account, report = () => {}) {
  return exclusively(account.id, async () => {
    let record = await keystore.device(account.id);
    let created = false;
    if (!record) {
      const keys = await makeDeviceKeys();
      record = {
        accountId: account.id,
        deviceId: null,
        signing: keys.signing,
        encryption: keys.encryption,
        createdAt: Date.now(),
      };
      await keystore.save(record);
      created = true;
      report("Keypair created");
    }
    // Earlier versions stored a `created` flag with the record, true for ever after: it means nothing.
    const { created: _stale, ...current } = record;
    record = current;
    if (!record.deviceId) {
      record = { ...record, deviceId: await register(accountSession, record) };
      await keystore.save(record);
    }
    try {
      if (record.pending) return { ...(await settlePending(record)), created };
      const deviceSession = await openSession(record);
      proveKeysOnce(account, deviceSession.token).catch(() => {}); // not waited for; once per key
      return { record, deviceSession, created };
    } catch (error) {
      throw await wipedIfRevoked(error, account.id);
    }
  });
}

/**
 * Once per key: a device registered before servers kept key proofs gives one for its current keys
 * (PROTOCOL §1.3), without which contacts refuse to seal to it. Its own directory says whether it has one.
 */
export function proveKeysOnce(account, deviceToken) {
  return exclusively(account.id, async () => {
    const record = await keystore.device(account.id);
    if (!record?.deviceId || record.pending || !record.signing?.privateKey) return;
    const signingSpki = await spki(record.signing.publicKey);
    if (record.keysProven === base64url(signingSpki)) return;
    const encryptionSpki = await spki(record.encryption.publicKey);
    const listed = await directory(account.username, deviceToken);
    const entry = (listed.history ?? []).find(
      (e) => e.deviceId === record.deviceId && !e.retiredAt && e.signingKey === base64url(signingSpki),
    );
    if (!entry) return; // not (or no longer) the listed key: nothing to prove now
    if (!entry.keyProof) {
      const challenge = crypto.getRandomValues(new Uint8Array(32));
      const message = await registrationMessage(challenge, account.id, signingSpki, encryptionSpki);
      const signature = await signLowS(record.signing.privateKey, message);
      await proveKeys({ challenge: base64url(challenge), signature: base64url(signature) }, deviceToken);
    }
    await keystore.markKeysProven(account.id, record.deviceId, base64url(signingSpki));
  });
}

/**
 * A remote wipe: when the server refuses a device session because the device was revoked (from another
 * device or the CLI), this browser deletes the device's data here. Returns the error to throw.
 */
async function wipedIfRevoked(error, accountId) {
  if (!(error instanceof ApiError && error.code === "device-revoked")) return error;
  await wipeDevice(accountId, { remote: true });
  return new ApiError(error.status, { ...error.problem, detail: `${error.message} ${WIPED_WORDS}` });
}

/** The record with its pending rotation's keys made current (the old ones kept, retired). */
function promoted(record) {
  const retired = { signing: record.signing, encryption: record.encryption, retiredAt: Date.now() };
  const { pending, ...rest } = record;
  return {
    ...rest,
    signing: pending.signing,
    encryption: pending.encryption,
    previous: [...(record.previous ?? []), retired],
  };
}

/**
 * Rotates this browser's device keys (cryptology-project's "change key"; PROTOCOL §1): new keys signed
 * for by the old signing key and by the new one. The new keys are stored (pending) before the server is
 * asked, so an answer lost on the way cannot leave the server with keys this browser no longer has. The
 * old private keys are kept, retired, so that messages sealed to them still open here; contacts who
 * pinned the old key follow the signed rotation. `keepHistory(record, keys)`, when given, runs before
 * the old private keys could be deleted (with the new keys made, and again once the server took them): it
 * re-seals what the old keys open to the new ones (messages.js).
 */
export function rotateDeviceKeys(deviceToken, accountId, { gate, keepHistory } = {}) {
  return exclusively(accountId, async () => {
    const record = await keystore.device(accountId);
    if (!record?.deviceId) throw new Error("This browser is not a device yet.");
    if (!record.signing.privateKey) throw new LockedError();
    // With the key gate (on, or being turned on: `gate`), keys made to be wrapped (SPEC §14.4).
    const keys = await makeDeviceKeys(Boolean(gate ?? record.gate));
    const oldSigning = await spki(record.signing.publicKey);
    const newSigning = await spki(keys.signing.publicKey);
    const newEncryption = await spki(keys.encryption.publicKey);
    const message = await rotationMessage(record.deviceId, oldSigning, newSigning, newEncryption);
    await keepHistory?.(record, keys);
    await keystore.save({ ...record, ...(gate && { gate }), pending: keys });
    try {
      await rotateKeys(
        {
          signingKey: base64url(newSigning),
          encryptionKey: base64url(newEncryption),
          oldKeySignature: base64url(await signLowS(record.signing.privateKey, message)),
          newKeySignature: base64url(await signLowS(keys.signing.privateKey, message)),
        },
        deviceToken,
      );
    } catch (error) {
      // Refused: the old keys stay the only ones. No answer: the pending keys wait for the next start.
      if (error instanceof ApiError && error.status >= 400) await keystore.save(record);
      throw error;
    }
    // Turning the gate on deletes the old private keys, retired ones included (SPEC §14.4): what arrived
    // since the first re-sealing is re-sealed first.
    await keepHistory?.(record, keys);
    const promotedRecord = promoted({ ...record, pending: keys });
    const rotated = gate ? { ...promotedRecord, gate, previous: [] } : promotedRecord;
    await keystore.save(rotated);
    return rotated;
  });
}

/** A device session for a record with a rotation whose answer never came: whichever keys the server has. */
async function settlePending(record) {
  try {
    const deviceSession = await openSession(record);
    const { pending: _unused, ...settled } = record;
    await keystore.save(settled);
    return { record: settled, deviceSession };
  } catch (error) {
    if (!(error instanceof ApiError) || error.status === 0) throw error;
    const rotated = promoted(record);
    const deviceSession = await openSession(rotated);
    await keystore.save(rotated);
    return { record: rotated, deviceSession };
  }
}

/** A new device session for the account's device here (after 4403: the old session ended). */
export function renewDeviceSession(accountId) {
  return exclusively(accountId, async () => {
    const record = await keystore.device(accountId);
    if (!record?.deviceId || !record.signing)
      throw new Error("This browser's device keys are gone: sign in again to set it up.");
    try {
      if (record.pending) return (await settlePending(record)).deviceSession;
      return await openSession(record);
    } catch (error) {
      throw await wipedIfRevoked(error, accountId);
    }
  });
}

/**
 * Revokes this browser's device on the server (so no copy of its keys could be used) and forgets its
 * keys, messages and pins here, and the account's key for files. A device the server no longer has (404)
 * counts as revoked.
 */
export function removeDevice(accountSession, accountId) {
  return exclusively(accountId, async () => {
    const record = await keystore.device(accountId);
    if (record?.deviceId) {
      try {
        await revokeDevice(record.deviceId, accountSession);
      } catch (error) {
        if (!(error instanceof ApiError && error.status === 404)) throw error;
      }
    }
    lock(accountId);
    await keystore.remove(accountId);
    await fileKeys.remove(accountId);
  });
}
