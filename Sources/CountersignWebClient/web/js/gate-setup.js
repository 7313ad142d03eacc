// Setting the key gate up (docs/SPEC.md §14.4): turning it on (with a passkey's PRF, or the password) and
// off, its failed-attempts limit, the password method following a password change, and its ways to unlock
// added and removed. Unlocking and the limit's wipe are gate.js.
import { ApiError } from "./api.js";
import { base64url } from "./bytes.js";
import { rotateDeviceKeys } from "./device.js";
import { revocationTokenMessage, signLowS } from "./device-keys.js";
import { deadline, gatedRecord, lastUnlockKind, openWithPasskey, openWithPassword, report } from "./gate.js";
import * as g from "./gate-crypto.js";
import { isUnlocked, lock, remember, LockedError } from "./gate-keys.js";
import { passkeyCeremony, saltPicker } from "./gate-passkey.js";
import {
  context,
  describeMethods,
  passkeyUse,
  methodKey,
  refuse,
  removalLeavesOne,
  same,
  withoutGate,
} from "./gate-rules.js";
import { changeGate, deviceRecord, saveWithoutGate } from "./gate-store.js";
import { setDeviceRevocationToken } from "./server/devices.js";
import { keepHistory } from "./messages.js";
import { listPasskeys } from "./server/passkeys.js";
import { session } from "./session.js";

// ---- Turning the gate on and off (SPEC §14.4)

// Only the device itself sets its revocation token, signed by its current signing key (PROTOCOL §1), and
// only from a session that authenticated recently, as revoking it would need.
async function putRevocationToken(record, token) {
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", token));
  const message = await revocationTokenMessage(record.deviceId, record.accountId, hash);
  const signature = await signLowS(record.signing.privateKey, message);
  await setDeviceRevocationToken(record.deviceId, { token: base64url(token), signature: base64url(signature) });
}

async function turnOn(record, wrappingKey, method, limit) {
  const { accountId } = record;
  const { gate, gateKey } = await g.createGate(wrappingKey, method, context(record), limit);
  await putRevocationToken(record, gate.revocationToken);
  // Open from the start: the new keys are wrapped under this gate key as they are stored.
  remember(accountId, gateKey, new Map(), deadline());
  try {
    // The old keys are deleted: what they open is re-sealed to the new ones first (nothing stops opening).
    await rotateDeviceKeys(session.deviceToken, accountId, { gate, keepHistory });
  } catch (error) {
    lock(accountId);
    throw error;
  }
  await report("enabled", method.kind);
}

const NOT_A_DEVICE = "This browser is not a device yet: wait for “Device ready” on the home screen.";
const NO_DEVICE_SESSION = "This browser has no device session yet: wait for “Device ready” on the home screen.";

async function plainRecord(accountId) {
  const record = await deviceRecord(accountId);
  if (!record?.deviceId || !record.signing) throw new Error(NOT_A_DEVICE);
  if (record.gate) throw new Error("The key gate is already on in this browser.");
  if (!session.deviceToken) throw new Error(NO_DEVICE_SESSION);
  return record;
}

/**
 * Turns the gate on with one of the account's passkeys. Throws GateRefusal "no prf" when the passkey gives
 * no PRF output (the caller offers the password instead), "no passkeys" without any.
 */
export async function enableWithPasskey(accountId, limit) {
  const record = await plainRecord(accountId);
  const picker = saltPicker(
    () => true,
    (allow, salts) => allow.every((c) => salts.has(c.id)),
  );
  let outcome;
  try {
    outcome = await passkeyCeremony(null, picker.pick);
  } catch (error) {
    if (error instanceof ApiError && error.code === "no-passkeys") throw refuse("no passkeys");
    throw error;
  }
  const { credentialId, prfOutput } = outcome;
  if (!prfOutput) throw refuse("no prf");
  const method = g.prfMethod(credentialId, picker.salts.get(base64url(credentialId)));
  await turnOn(record, await g.prfWrappingKey(prfOutput), method, limit);
}

/** Turns the gate on with the password (the account's, as typed): where no passkey has a PRF. */
export async function enableWithPassword(accountId, password, limit) {
  const record = await plainRecord(accountId);
  if (!password) throw new Error("Enter your password.");
  const method = g.passwordMethod();
  await turnOn(record, await g.passwordWrappingKey(password, method.salt, method.iterations), method, limit);
}

/**
 * Turns the gate off: the keys of the open gate (the caller has just unlocked it once more) are stored
 * unwrapped, non-extractable, as before the gate. The server's revocation token is replaced by one nobody
 * keeps, so an old copy of the record cannot end the device.
 */
export async function disable(accountId) {
  const record = await deviceRecord(accountId);
  if (!record?.gate) return;
  const method = lastUnlockKind(accountId) ?? record.gate.methods[0].kind;
  if (!isUnlocked(accountId) || !record.signing.privateKey) throw new LockedError();
  const out = withoutGate(record);
  await saveWithoutGate(out);
  lock(accountId);
  try {
    await putRevocationToken(out, crypto.getRandomValues(new Uint8Array(32)));
  } catch {
    // The device stays; only a copy of the old record could still revoke it.
  }
  await report("disabled", method);
}

/** A new failed-attempts limit for the open gate (3 to 10). */
export async function setLimit(accountId, limit) {
  const record = await deviceRecord(accountId);
  if (!record?.gate) return;
  if (!isUnlocked(accountId)) throw new LockedError();
  await changeGate(accountId, (gate) => ({ ...gate, limit, failures: Math.min(gate.failures, limit) }));
}

/**
 * After the account password was changed in this browser: the gate's password method follows it (wrapped
 * from the old password's unlock, SPEC §14.4). False when the gate's password was another one.
 */
export async function passwordChanged(accountId, oldPassword, newPassword) {
  const record = await deviceRecord(accountId);
  const old = record?.gate?.methods.find((m) => m.kind === "password");
  if (!old) return true;
  const fresh = g.passwordMethod();
  try {
    const method = await g.rewrapMethod(
      await g.passwordWrappingKey(oldPassword, old.salt, old.iterations),
      old,
      await g.passwordWrappingKey(newPassword, fresh.salt, fresh.iterations),
      fresh,
      context(record),
    );
    const follow = (m) => (m.kind === "password" ? method : m);
    await changeGate(accountId, (gate) => ({ ...gate, methods: gate.methods.map(follow) }));
    return true;
  } catch {
    return false;
  }
}

// ---- More ways to unlock (SPEC §14.4)

/**
 * The gate's methods with words for the screen: [{ method, kind, label, usable, credentialId (base64url,
 * passkeys) }]. A passkey is named from the account's list; one removed from the account says so and is
 * not usable.
 */
export async function gateMethods(accountId) {
  const record = await deviceRecord(accountId);
  if (!record?.gate) return [];
  const { passkeys } = await listPasskeys();
  return describeMethods(record.gate.methods, passkeys);
}

/** The wrapping key and method of a new passkey of the account, not in the gate yet (`inGate`). */
async function newPasskeyMethod(inGate) {
  const picker = saltPicker(
    (p) => !inGate.has(p.credentialId),
    (allow, salts) => allow.some((c) => salts.has(c.id)),
    () => refuse("all passkeys"),
  );
  const { credentialId, prfOutput } = await passkeyCeremony(null, picker.pick);
  if (!prfOutput) throw refuse("no prf");
  return [await g.prfWrappingKey(prfOutput), g.prfMethod(credentialId, picker.salts.get(base64url(credentialId)))];
}

/**
 * Adds a way to unlock: first a counted unlock with a method the gate has (`proofPassword` typed, or null for
 * one of its passkeys), then the gate key, unwrapped under that method's key, is wrapped under the new one's
 * (`rewrapMethod`). `add` is "passkey" (a prompt over the account's passkeys not in the gate yet) or
 * { password } (the caller has checked it with the server). Two prompts when both are passkeys.
 */
export async function addMethod(accountId, { proofPassword = null, add }) {
  const record = await gatedRecord(accountId);
  const methods = record.gate.methods;
  if (add !== "passkey" && !add?.password) throw new Error("Enter the password to add.");
  if (add !== "passkey" && methods.some((m) => m.kind === "password")) {
    throw new Error("The key gate here already opens with a password.");
  }
  if (methods.length >= g.MAX_METHODS) {
    throw new Error(`The key gate opens with at most ${g.MAX_METHODS} methods: remove one first.`);
  }
  const inGate = new Set(methods.filter((m) => m.kind === "prf").map((m) => base64url(m.credentialId)));
  if (add === "passkey") {
    // Said before the proof is asked for: nothing to add.
    const { passkeys } = await listPasskeys();
    if (!passkeys.length) throw refuse("no passkeys");
    if (passkeys.every((p) => inGate.has(p.credentialId))) throw refuse("all passkeys");
  }
  const proof =
    proofPassword === null ? await openWithPasskey(accountId) : await openWithPassword(accountId, proofPassword);
  let toKey;
  let toMethod;
  if (add === "passkey") {
    [toKey, toMethod] = await newPasskeyMethod(inGate);
  } else {
    toMethod = g.passwordMethod();
    toKey = await g.passwordWrappingKey(add.password, toMethod.salt, toMethod.iterations);
  }
  const entry = await g.rewrapMethod(proof.key, proof.method, toKey, toMethod, context(record));
  // Another window may have turned the gate off and on meanwhile: this entry wraps the old gate key.
  const changed = () => new Error("The key gate changed in another window meanwhile. Nothing was added: try again.");
  const added = await changeGate(accountId, (gate) => {
    if (!same(gate.revocationToken, record.gate.revocationToken)) throw changed();
    return { ...gate, methods: [...gate.methods, entry] };
  });
  if (!added) throw changed();
  await report("method-added", toMethod.kind);
}

/**
 * Removes a way to unlock (the gate open: the caller has just unlocked it). One that works must stay. An old
 * copy of the record still holds the removed method's wrap of the same gate key (SPEC §14.4): the caller
 * says to turn the gate off and on again, which makes a new gate key and new message keys.
 */
export async function removeMethod(accountId, method) {
  const record = await deviceRecord(accountId);
  if (!record?.gate) return;
  if (!isUnlocked(accountId)) throw new LockedError();
  if (!removalLeavesOne(record.gate.methods, method, await gateMethods(accountId))) {
    throw new Error(
      "The key gate needs one way to unlock that still works: add another first, or turn the gate off.",
    );
  }
  const gone = methodKey(method);
  await changeGate(accountId, (gate) => ({ ...gate, methods: gate.methods.filter((m) => methodKey(m) !== gone) }));
  await report("method-removed", method.kind);
}

/**
 * What removing the account's passkey `credentialId` (base64url) does to this browser's gate: "only" when
 * it is the gate's only usable way to unlock (the keys would be lost), "one" when another usable one stays,
 * null when the gate does not use it. Throws when the account's passkeys cannot be read.
 */
export async function passkeyInGate(accountId, credentialId) {
  const record = await deviceRecord(accountId);
  const methods = record?.gate?.methods ?? [];
  if (!methods.some((m) => m.kind === "prf" && base64url(m.credentialId) === credentialId)) return null;
  return passkeyUse(methods, await gateMethods(accountId), credentialId);
}
