// The key gate's state machine (docs/SPEC.md §14.4, §14.5): turning it on and off, unlocking by passkey
// (its PRF output) or by password, counting failed attempts, and the wipe and self-revocation at the limit.
// The cryptography is gate-crypto.js; what is open lives in gate-keys.js; the screens are screens/gate.js.
//
// One passkey prompt both re-authenticates the session and unlocks: the server's passkey re-authentication
// ceremony, with `extensions.prf.evalByCredential` built from this browser's own gate record. The PRF
// output is used here only; the JSON sent to the server has no extension outputs (credentialForServer).
import { ApiError } from "./api.js";
import { base64url, fromBase64url } from "./bytes.js";
import { renewDeviceSession, rotateDeviceKeys } from "./device.js";
import { revocationTokenMessage, signLowS } from "./device-keys.js";
import * as g from "./gate-crypto.js";
import { isUnlocked, keyIdHex, lock, onGateChange, remember, LockedError } from "./gate-keys.js";
import { keystore } from "./keystore.js";
import { visibleText } from "./display-name.js";
import { credentialForServer } from "./passkeys.js";
import { listDevices, selfRevokeDevice, setDeviceRevocationToken } from "./server/devices.js";
import { recordKeyGateEvent } from "./server/key-gate.js";
import { listPasskeys, passkeyReauth, startPasskeyReauth } from "./server/passkeys.js";
import { signOut } from "./server/sessions.js";
import { session } from "./session.js";
import { WIPED_WORDS, wipeDevice } from "./wipe.js";

/** Why an unlock or a setup did not happen, in words for the screen. `kind` is one of the keys below. */
export class GateRefusal extends Error {
  constructor(kind, message, attemptsLeft) {
    super(message);
    this.name = "GateRefusal";
    this.kind = kind;
    this.attemptsLeft = attemptsLeft;
  }
}

const left = (n) => `${n} ${n === 1 ? "attempt" : "attempts"} left before this browser deletes its keys.`;
const refusals = {
  "wrong passkey": (n) => `Wrong passkey: it does not unlock the keys kept here. ${left(n)}`,
  "wrong password": (n) => `Wrong password: it does not unlock the keys kept here. ${left(n)}`,
  "not verified": () => "The passkey did not verify you (no fingerprint, face or PIN), so nothing was tried. Try again.",
  cancelled: () => "The passkey did not answer: the prompt was cancelled, timed out, or could not verify you. Nothing was tried.",
  "no prf": () => "This passkey's authenticator has no PRF (it gives this browser no secret), so it cannot lock or unlock the keys here.",
  "other passkey": () => "None of your passkeys that unlock the keys in this browser answered: use one listed under Key gate → Ways to unlock, or the password if it is listed.",
  "no passkeys": () => "Your account has no passkey yet. Add one first, or lock the keys with your password.",
  "all passkeys": () => "Every passkey of your account already unlocks the keys here. Add a passkey to your account first (Passkeys, above).",
  wiped: () =>
    `Too many failed attempts to unlock. ${WIPED_WORDS} Its device revoked itself: sign in again to set this browser up as a new device.`,
};
const refuse = (kind, attemptsLeft) => new GateRefusal(kind, refusals[kind](attemptsLeft), attemptsLeft);

/** The kind of the method that last unlocked each account's gate here (what "disabled" reports). */
const lastKind = new Map();

const context = (record) => ({ accountId: record.accountId, deviceId: record.deviceId });
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const intervalMs = () => (session.account?.settings?.reauthIntervalMinutes ?? 0) * 60_000;

/** Whether the re-authentication interval has run out since the last sign-in or re-authentication. */
export const reauthDue = () => intervalMs() > 0 && Date.now() - session.authenticatedAt >= intervalMs();

/** Until when an unlock made now stays open: the interval from the last authentication (or from now, when
 *  this unlock is the re-authentication), no deadline with the interval "Never". */
const deadline = () => (intervalMs() > 0 ? (reauthDue() ? Date.now() : session.authenticatedAt) + intervalMs() : Infinity);

/** Reports to the audit log; a refusal (rate limit, network) never stops the gate. */
async function report(event, method) {
  try {
    await recordKeyGateEvent({ event, method });
  } catch {
    // The audit is the server's record of what the browser says; the gate's state is here.
  }
}

/**
 * The gate of the account's device here: { state: "none" | "off" | "on" | "wiped", gate, kinds, attemptsLeft,
 * unlocked }. A turn-on whose rotation never settled (its keys were never replaced) is undone: the old keys
 * still work, unwrapped, so the gate was never on.
 */
export async function gateStatus(accountId) {
  const record = await keystore.device(accountId);
  if (record?.wiped) return { state: "wiped" };
  if (!record?.signing || !record.deviceId) return { state: "none" };
  if (!record.gate) return { state: "off" };
  if (!record.signing.wrapped && !record.pending) {
    const { gate: _undone, ...plain } = record;
    await keystore.save(plain);
    return { state: "off" };
  }
  let gate;
  try {
    gate = g.checkGate(record.gate);
  } catch (error) {
    throw error instanceof g.GateError ? new Error(g.MESSAGES[error.kind]) : error;
  }
  return { state: "on", gate, kinds: gate.methods.map((m) => m.kind), attemptsLeft: g.attemptsLeft(gate), unlocked: isUnlocked(accountId) };
}

/** Resolves at the account's next unlock. */
export const nextUnlock = (accountId) =>
  new Promise((resolve) => {
    const off = onGateChange((id, unlocked) => id === accountId && unlocked && (off(), resolve()));
  });

// ---- The passkey ceremony: re-authentication and PRF in one prompt

/**
 * Re-authenticates the session with a passkey, asking each credential in `salts` (base64url credential ID
 * → 32-byte salt) for its PRF at its salt. `pick` maps the server's options to the salts when they are not
 * known yet. Returns { credentialId, prfOutput (null without one) }.
 */
async function passkeyCeremony(salts, pick) {
  const start = await startPasskeyReauth();
  if (pick) salts = await pick(start.publicKey.allowCredentials);
  const options = PublicKeyCredential.parseRequestOptionsFromJSON({
    ...start.publicKey,
    // Only the passkeys that can unlock: evalByCredential may name no other.
    allowCredentials: start.publicKey.allowCredentials.filter((c) => salts.has(c.id)),
  });
  if (!options.allowCredentials.length) throw refuse("other passkey");
  options.extensions = { prf: { evalByCredential: Object.fromEntries([...salts].map(([id, salt]) => [id, { first: salt }])) } };
  let credential;
  try {
    credential = await navigator.credentials.get({ publicKey: options });
  } catch {
    throw refuse("cancelled");
  }
  if (!credential) throw refuse("cancelled");
  // User verification (flags bit 2, SPEC §13.3): without it an authenticator evaluates another PRF, and
  // the server would count the assertion as a wrong passkey.
  const flags = new Uint8Array(credential.response.authenticatorData)[32];
  if (!(flags & 0x04)) throw refuse("not verified");
  const first = credential.getClientExtensionResults().prf?.results?.first;
  await passkeyReauth({ ceremonyId: start.ceremonyId, credential: credentialForServer(credential) });
  session.authenticated();
  return { credentialId: new Uint8Array(credential.rawId), prfOutput: first ? new Uint8Array(first) : null };
}

// ---- Unlocking (SPEC §14.4, §14.5)

/**
 * Stores `change(gate)` as the account's gate, read and written in one transaction (keystore.updateGate):
 * a count made meanwhile in another window is kept. Without a gate (wiped meanwhile) nothing is stored.
 */
const changeGate = (accountId, change) => keystore.updateGate(accountId, (gate) => (gate ? g.checkGate(change(gate)) : null));

/**
 * Counts one attempt (SPEC §14.5): `failures + 1` stored before anything is checked, read and written in one
 * transaction, so attempts made at once (in this window or another) each count. Resolves with the gate as
 * counted, or null when nothing may be tried: the limit was reached, or the gate is gone (wiped).
 */
async function countAttempt(accountId) {
  let counted = false;
  const gate = await keystore.updateGate(accountId, (stored) => {
    if (!stored || g.attemptsLeft(stored) <= 0) return null;
    counted = true;
    return g.countAttempt(stored);
  });
  return counted ? gate : null;
}

/**
 * The account's gated record; at the limit (found there at start) nothing is tried: wipe and revoke (unless
 * an attempt of this page still being checked turns out right and resets the count: then read again).
 */
async function gatedRecord(accountId) {
  const record = await keystore.device(accountId);
  if (!record?.gate) throw new Error("The key gate is off in this browser.");
  if (g.attemptsLeft(record.gate) <= 0) {
    if (await wipeAtLimit(accountId, record.gate.methods[0].kind)) throw refuse("wiped");
    return gatedRecord(accountId);
  }
  return record;
}

/** Every wrapped private key of the record, unwrapped with the gate key: key ID hex → CryptoKey. */
async function unwrapAll(gateKey, record) {
  const keys = new Map();
  const pairs = [record, ...(record.previous ?? []), ...(record.pending ? [record.pending] : [])];
  for (const pair of pairs) {
    for (const role of ["signing", "encryption"]) {
      const half = pair[role];
      if (!half?.wrapped) continue;
      keys.set(await keyIdHex(half.publicKey), await g.unwrapPrivateKey(gateKey, half.wrapped, context(record), half.publicKey, role));
    }
  }
  return keys;
}

/** accountId → this page's counted attempts not settled yet (checked and reported): a wipe waits for them. */
const checking = new Map();

/** The gate key and the private keys under `method`'s wrapping key; `[]` when it is not the right one. */
async function check(record, method, makeKey) {
  try {
    const gateKey = await g.openGate(await makeKey(), method, context(record));
    return [gateKey, await unwrapAll(gateKey, record)];
  } catch (error) {
    if (error instanceof g.GateError && error.kind === "unlock failed") return [];
    throw error instanceof g.GateError ? Object.assign(new Error(g.MESSAGES[error.kind]), { malformed: true }) : error;
  }
}

/** One counted attempt with `method` and the wrapping key `makeKey()` derives. */
async function attempt(record, method, makeKey) {
  const { accountId } = record;
  const counted = await countAttempt(accountId);
  if (!counted) {
    const now = await keystore.device(accountId);
    if (now && !now.gate && !now.wiped) throw new Error("The key gate was turned off in another window meanwhile.");
    // At the limit. A right attempt of this page, still being checked, may reset it: then this one is tried.
    if (await wipeAtLimit(accountId, method.kind)) throw refuse("wiped");
    return attempt(await gatedRecord(accountId), method, makeKey);
  }
  // Settled (released) before this attempt waits for a wipe itself, which waits for the others.
  let release;
  const settled = new Promise((resolve) => (release = resolve));
  if (!checking.has(accountId)) checking.set(accountId, new Set());
  checking.get(accountId).add(settled);
  const settle = () => (checking.get(accountId).delete(settled), release());
  try {
    let gateKey;
    let keys;
    try {
      [gateKey, keys] = await check(record, method, makeKey);
    } catch (error) {
      // Malformed: nothing was decrypted, so this attempt is not counted (others made meanwhile stay).
      if (error.malformed) await changeGate(accountId, (gate) => ({ ...gate, failures: Math.max(0, gate.failures - 1) }));
      throw error;
    }
    if (!gateKey) {
      await report("unlock-failed", method.kind);
      settle();
      let n = g.attemptsLeft(counted);
      if (n <= 0) {
        if (await wipeAtLimit(accountId, method.kind)) throw refuse("wiped");
        // A right attempt of this page reset the count meanwhile.
        const now = (await keystore.device(accountId))?.gate;
        n = now ? g.attemptsLeft(now) : 0;
      }
      throw refuse(method.kind === "prf" ? "wrong passkey" : "wrong password", n);
    }
    const reset = await changeGate(accountId, g.resetAttempts);
    if (reset) {
      remember(accountId, gateKey, keys, deadline());
      lastKind.set(accountId, method.kind);
      await report("unlocked", method.kind);
      return;
    }
    // Wiped by another window while this one was checked: the keys here are gone.
    settle();
    await wipeAtLimit(accountId, method.kind);
    throw refuse("wiped");
  } finally {
    settle();
  }
}

/** A counted unlock with one of the gate's passkeys; returns the method and its wrapping key. */
async function openWithPasskey(accountId) {
  const record = await gatedRecord(accountId);
  const methods = record.gate.methods.filter((m) => m.kind === "prf");
  const { credentialId, prfOutput } = await passkeyCeremony(new Map(methods.map((m) => [base64url(m.credentialId), m.prfSalt])));
  const method = methods.find((m) => same(m.credentialId, credentialId));
  if (!method) throw refuse("other passkey");
  if (!prfOutput) throw refuse("no prf");
  let key;
  await attempt(await gatedRecord(accountId), method, async () => (key = await g.prfWrappingKey(prfOutput)));
  return { method, key };
}

/** A counted unlock with the gate's password; returns the method and its wrapping key. */
async function openWithPassword(accountId, password) {
  const record = await gatedRecord(accountId);
  const method = record.gate.methods.find((m) => m.kind === "password");
  if (!method) throw new Error("The key gate here has no password: unlock it with your passkey.");
  if (!password) throw new Error("Enter your password.");
  // Derived inside the attempt: the count is stored before the slow PBKDF2, so guesses made at once in
  // several windows each count.
  let key;
  await attempt(record, method, async () => (key = await g.passwordWrappingKey(password, method.salt, method.iterations)));
  return { method, key };
}

/** Unlocks with a passkey of the gate: one prompt re-authenticates the session and gives the PRF output. */
export async function unlockWithPasskey(accountId) {
  await openWithPasskey(accountId);
}

/** Unlocks with the password method (PBKDF2, SPEC §14.1). The server is not asked: the caller re-authenticates
 *  with the same password when the interval has run out. */
export async function unlockWithPassword(accountId, password) {
  await openWithPassword(accountId, password);
}

// ---- The limit: wipe and self-revocation (SPEC §14.5)

/** accountId → the wipe running in this page: attempts that reach the limit together wipe once. */
const wiping = new Map();

/**
 * At the limit: deletes this browser's keys, envelopes, pins, authenticator and file key for the account,
 * keeping only the note the self-revocation needs; reports it; revokes the device; ends the session. The
 * page goes back to sign-in with the words (main.js listens for "countersign:wiped"). Resolves with true,
 * or false when the count is below the limit by then.
 *
 * This page's counted attempts still being checked end first (each is reported, and a right one resets the
 * count, so nothing is wiped). Once per page however many attempts reached the limit together, and under a
 * Web Lock per account: a window that finds another has wiped (no gate left, or only its note) finishes
 * the self-revocation if it is still due and signs out.
 */
function wipeAtLimit(accountId, method) {
  if (!wiping.has(accountId)) {
    const run = async () => {
      await Promise.allSettled([...(checking.get(accountId) ?? [])]);
      const locked = () => wipe(accountId, method);
      return navigator.locks ? navigator.locks.request(`countersign gate ${accountId}`, locked) : locked();
    };
    wiping.set(accountId, run().finally(() => wiping.delete(accountId)));
  }
  return wiping.get(accountId);
}

async function wipe(accountId, method) {
  const record = await keystore.device(accountId);
  if (record?.gate && g.attemptsLeft(record.gate) > 0) return false;
  if (record?.gate) {
    await wipeDevice(accountId, { note: { deviceId: record.deviceId, revocationToken: record.gate.revocationToken }, authenticator: true });
    await report("wiped", method);
  } else {
    lock(accountId);
  }
  await finishSelfRevocation(accountId);
  try {
    await signOut();
  } catch {
    // Signed out here either way.
  }
  dispatchEvent(new CustomEvent("countersign:wiped", { detail: refusals.wiped() }));
  return true;
}

/**
 * Sends a kept self-revocation note (a wipe whose answer never came); deletes it once the server answers
 * (revoked, or 404: already gone). True when no note is left.
 */
export async function finishSelfRevocation(accountId) {
  const note = await keystore.device(accountId);
  if (!note?.wiped) return true;
  try {
    await selfRevokeDevice(note.deviceId, { token: base64url(note.revocationToken) });
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) return false;
  }
  await keystore.remove(accountId);
  return true;
}

// ---- Remote wipe

/**
 * Asks the server (with the account's session: a locked device cannot sign) whether this device was
 * revoked from elsewhere; if so, deletes its data here. True when it was.
 */
export async function wipedIfRevokedElsewhere(accountId) {
  const record = await keystore.device(accountId);
  if (!record?.deviceId || record.wiped) return false;
  const { devices } = await listDevices();
  const mine = devices.find((d) => d.id === record.deviceId);
  if (!mine?.revokedAt) return false;
  await wipeDevice(accountId, { remote: true });
  if (record.gate) await report("wiped", record.gate.methods[0].kind);
  return true;
}

/**
 * A new device session for the push channel (after 4403). While the gate is locked no key can sign: the
 * server is asked whether the device was revoked (a remote wipe), and otherwise the session waits for the
 * next unlock.
 */
export async function renewWhenUnlocked(accountId) {
  for (;;) {
    const record = await keystore.device(accountId);
    if (!record?.gate || isUnlocked(accountId)) return renewDeviceSession(accountId);
    if (await wipedIfRevokedElsewhere(accountId)) {
      throw new ApiError(403, { code: "device-revoked", detail: WIPED_WORDS });
    }
    await nextUnlock(accountId);
  }
}

// ---- Turning the gate on and off (SPEC §14.4)

// Only the device itself sets its revocation token, signed by its current signing key (PROTOCOL §1), and
// only from a session that authenticated recently, as revoking it would need.
async function putRevocationToken(record, token) {
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", token));
  const signature = await signLowS(record.signing.privateKey, await revocationTokenMessage(record.deviceId, record.accountId, hash));
  await setDeviceRevocationToken(record.deviceId, { token: base64url(token), signature: base64url(signature) });
}

async function turnOn(record, wrappingKey, method, limit) {
  const { accountId } = record;
  const { gate, gateKey } = await g.createGate(wrappingKey, method, context(record), limit);
  await putRevocationToken(record, gate.revocationToken);
  // Open from the start: the new keys are wrapped under this gate key as they are stored.
  remember(accountId, gateKey, new Map(), deadline());
  try {
    await rotateDeviceKeys(session.deviceToken, accountId, { gate });
  } catch (error) {
    lock(accountId);
    throw error;
  }
  await report("enabled", method.kind);
}

async function plainRecord(accountId) {
  const record = await keystore.device(accountId);
  if (!record?.deviceId || !record.signing) throw new Error("This browser is not a device yet: wait for “Device ready” on the home screen.");
  if (record.gate) throw new Error("The key gate is already on in this browser.");
  if (!session.deviceToken) throw new Error("This browser has no device session yet: wait for “Device ready” on the home screen.");
  return record;
}

/**
 * Turns the gate on with one of the account's passkeys. Throws GateRefusal "no prf" when the passkey gives
 * no PRF output (the caller offers the password instead), "no passkeys" without any.
 */
export async function enableWithPasskey(accountId, limit) {
  const record = await plainRecord(accountId);
  let salts;
  // Each summary names its credential, so a salt goes with the passkey it belongs to.
  const pick = async (allow) => {
    const { passkeys } = await listPasskeys();
    salts = new Map(passkeys.map((p) => [p.credentialId, fromBase64url(p.prfSalt)]));
    if (!allow.every((c) => salts.has(c.id))) throw new Error("Your passkeys changed meanwhile. Try again.");
    return salts;
  };
  let outcome;
  try {
    outcome = await passkeyCeremony(null, pick);
  } catch (error) {
    if (error instanceof ApiError && error.code === "no-passkeys") throw refuse("no passkeys");
    throw error;
  }
  const { credentialId, prfOutput } = outcome;
  if (!prfOutput) throw refuse("no prf");
  await turnOn(record, await g.prfWrappingKey(prfOutput), g.prfMethod(credentialId, salts.get(base64url(credentialId))), limit);
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
  const record = await keystore.device(accountId);
  if (!record?.gate) return;
  const method = lastKind.get(accountId) ?? record.gate.methods[0].kind;
  if (!isUnlocked(accountId) || !record.signing.privateKey) throw new LockedError();
  const plain = (half) => ({ publicKey: half.publicKey, privateKey: half.privateKey });
  const pair = (p) => ({ ...p, signing: plain(p.signing), encryption: plain(p.encryption) });
  const { gate: _off, ...rest } = record;
  const out = {
    ...pair(rest),
    previous: (record.previous ?? []).filter((p) => p.signing.privateKey && p.encryption.privateKey).map(pair),
  };
  if (record.pending) out.pending = pair(record.pending);
  await keystore.save(out);
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
  const record = await keystore.device(accountId);
  if (!record?.gate) return;
  if (!isUnlocked(accountId)) throw new LockedError();
  await changeGate(accountId, (gate) => ({ ...gate, limit, failures: Math.min(gate.failures, limit) }));
}

/**
 * After the account password was changed in this browser: the gate's password method follows it (wrapped
 * from the old password's unlock, SPEC §14.4). False when the gate's password was another one.
 */
export async function passwordChanged(accountId, oldPassword, newPassword) {
  const record = await keystore.device(accountId);
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
    await changeGate(accountId, (gate) => ({ ...gate, methods: gate.methods.map((m) => (m.kind === "password" ? method : m)) }));
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
  const record = await keystore.device(accountId);
  if (!record?.gate) return [];
  const { passkeys } = await listPasskeys();
  const names = new Map(passkeys.map((p) => [p.credentialId, p.name]));
  return record.gate.methods.map((method) => {
    if (method.kind === "password") return { method, kind: "password", label: "Your password", usable: true };
    const id = base64url(method.credentialId);
    const name = names.get(id);
    // A passkey removed from the account is never offered by the server again: it cannot unlock.
    return { method, kind: "prf", credentialId: id, label: name ? `Passkey “${visibleText(name)}”` : "A passkey removed from your account", usable: names.has(id) };
  });
}

/**
 * Adds a way to unlock: first a counted unlock with a method the gate has (`proofPassword` typed, or null for
 * one of its passkeys), then the gate key, unwrapped under that method's key, is wrapped under the new one's
 * (`rewrapMethod`). `add` is "passkey" (a prompt over the account's passkeys not in the gate yet) or
 * { password } (the caller has checked it with the server). Two prompts when both are passkeys.
 */
export async function addMethod(accountId, { proofPassword = null, add }) {
  const record = await gatedRecord(accountId);
  if (add !== "passkey" && !add?.password) throw new Error("Enter the password to add.");
  if (add !== "passkey" && record.gate.methods.some((m) => m.kind === "password")) throw new Error("The key gate here already opens with a password.");
  if (record.gate.methods.length >= g.MAX_METHODS) throw new Error(`The key gate opens with at most ${g.MAX_METHODS} methods: remove one first.`);
  const inGate = new Set(record.gate.methods.filter((m) => m.kind === "prf").map((m) => base64url(m.credentialId)));
  if (add === "passkey") {
    // Said before the proof is asked for: nothing to add.
    const { passkeys } = await listPasskeys();
    if (!passkeys.length) throw refuse("no passkeys");
    if (passkeys.every((p) => inGate.has(p.credentialId))) throw refuse("all passkeys");
  }
  const proof = proofPassword === null ? await openWithPasskey(accountId) : await openWithPassword(accountId, proofPassword);
  let toKey;
  let toMethod;
  if (add === "passkey") {
    let salts;
    const pick = async (allow) => {
      const { passkeys } = await listPasskeys();
      const addable = passkeys.filter((p) => !inGate.has(p.credentialId));
      salts = new Map(addable.map((p) => [p.credentialId, fromBase64url(p.prfSalt)]));
      if (!salts.size) throw refuse("all passkeys");
      if (!allow.some((c) => salts.has(c.id))) throw new Error("Your passkeys changed meanwhile. Try again.");
      return salts;
    };
    const { credentialId, prfOutput } = await passkeyCeremony(null, pick);
    if (!prfOutput) throw refuse("no prf");
    toKey = await g.prfWrappingKey(prfOutput);
    toMethod = g.prfMethod(credentialId, salts.get(base64url(credentialId)));
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
  const record = await keystore.device(accountId);
  if (!record?.gate) return;
  if (!isUnlocked(accountId)) throw new LockedError();
  const key = (m) => (m.kind === "password" ? "password" : base64url(m.credentialId));
  const methods = record.gate.methods.filter((m) => key(m) !== key(method));
  const usable = new Set((await gateMethods(accountId)).filter((m) => m.usable).map((m) => key(m.method)));
  if (!methods.some((m) => usable.has(key(m)))) {
    throw new Error("The key gate needs one way to unlock that still works: add another first, or turn the gate off.");
  }
  await changeGate(accountId, (gate) => ({ ...gate, methods: gate.methods.filter((m) => key(m) !== key(method)) }));
  await report("method-removed", method.kind);
}

/**
 * What removing the account's passkey `credentialId` (base64url) does to this browser's gate: "only" when
 * it is the gate's only usable way to unlock (the keys would be lost), "one" when another usable one stays,
 * null when the gate does not use it. Throws when the account's passkeys cannot be read.
 */
export async function passkeyInGate(accountId, credentialId) {
  const record = await keystore.device(accountId);
  if (!record?.gate?.methods.some((m) => m.kind === "prf" && base64url(m.credentialId) === credentialId)) return null;
  const usable = (await gateMethods(accountId)).filter((m) => m.usable);
  return usable.some((m) => m.credentialId !== credentialId) ? "one" : "only";
}
