// The key gate's state machine (docs/SPEC.md §14.4, §14.5): the gate's status, unlocking by passkey (its
// PRF output) or by password, counting failed attempts, and the wipe and self-revocation at the limit; a
// device revoked elsewhere is wiped at next contact. Turning the gate on and off and its ways to unlock are
// gate-setup.js; the rules are gate-rules.js, the cryptography gate-crypto.js, the stored gate
// gate-store.js, what is open gate-keys.js, the passkey prompt gate-passkey.js; the screens are
// screens/gate.js.
import { ApiError } from "./api.js";
import { forgetAuthenticator } from "./authenticator/runtime.js";
import { base64url } from "./bytes.js";
import { renewDeviceSession } from "./device.js";
import { emit, on } from "./events.js";
import * as g from "./gate-crypto.js";
import { isUnlocked, keyIdHex, lock, remember } from "./gate-keys.js";
import { passkeyCeremony } from "./gate-passkey.js";
import { REFUSALS, WIPED_WORDS, context, refuse, same, unlockWindow } from "./gate-rules.js";
import { changeGate, countAttempt, deviceRecord, forgetNote, uncountAttempt, undoTurnOn } from "./gate-store.js";
import { allFor, run } from "./keystore.js";
import { listDevices, selfRevokeDevice } from "./server/devices.js";
import { recordKeyGateEvent } from "./server/key-gate.js";
import { signOut } from "./server/sessions.js";
import { session } from "./session.js";
import { wipeDevice } from "./wipe.js";

/** The kind of the method that last unlocked each account's gate here (what "disabled" reports). */
const lastKind = new Map();

/** The kind of the method that last unlocked the account's gate in this page, if any. */
export const lastUnlockKind = (accountId) => lastKind.get(accountId);

const clock = () => ({
  intervalMinutes: session.account?.settings?.reauthIntervalMinutes,
  authenticatedAt: session.authenticatedAt,
  now: Date.now(),
});

/** Whether the re-authentication interval has run out since the last sign-in or re-authentication. */
export const reauthDue = () => unlockWindow(clock()).due;

/** Until when an unlock made now stays open (gate-rules.js's unlockWindow). */
export const deadline = () => unlockWindow(clock()).until;

/**
 * Reports to the audit log; a refusal (rate limit, network) never stops the gate. Before the account has a
 * session here (the "Locked" screen of a reload: the session resumes only once the keys open), the event is
 * held in IndexedDB and sent at the account's next session (`sendHeldReports`).
 */
export async function report(event, method, accountId = session.account?.id) {
  if (!session.token || (accountId && session.account?.id !== accountId)) {
    if (!accountId) return;
    await run("heldReports", "readwrite", (store) =>
      store.put({ id: crypto.randomUUID(), accountId, event, method, at: Date.now() }),
    ).catch(() => {});
    return;
  }
  try {
    await recordKeyGateEvent({ event, method });
  } catch {
    // The audit is the server's record of what the browser says; the gate's state is here.
  }
}

/** Sends the events held for the account (oldest first) now that it has a session here. */
export async function sendHeldReports(accountId) {
  const held = (await allFor("heldReports", accountId).catch(() => [])).sort((a, b) => a.at - b.at);
  for (const { id, event, method } of held) {
    try {
      await recordKeyGateEvent({ event, method });
    } catch {
      return; // kept for the next session
    }
    await run("heldReports", "readwrite", (store) => store.delete(id)).catch(() => {});
  }
}

/**
 * The gate of the account's device here: { state: "none" | "off" | "on" | "wiped", gate, kinds, attemptsLeft,
 * unlocked }. A turn-on whose rotation never settled (its keys were never replaced) is undone: the old keys
 * still work, unwrapped, so the gate was never on.
 */
export async function gateStatus(accountId) {
  const record = await deviceRecord(accountId);
  if (record?.wiped) return { state: "wiped" };
  if (!record?.signing || !record.deviceId) return { state: "none" };
  if (!record.gate) return { state: "off" };
  if (!record.signing.wrapped && !record.pending) {
    await undoTurnOn(record);
    return { state: "off" };
  }
  let gate;
  try {
    gate = g.checkGate(record.gate);
  } catch (error) {
    throw error instanceof g.GateError ? new Error(g.MESSAGES[error.kind]) : error;
  }
  const kinds = gate.methods.map((m) => m.kind);
  return { state: "on", gate, kinds, attemptsLeft: g.attemptsLeft(gate), unlocked: isUnlocked(accountId) };
}

// ---- Unlocking (SPEC §14.4, §14.5)

/**
 * The account's gated record; at the limit (found there at start) nothing is tried: wipe and revoke (unless
 * an attempt of this page still being checked turns out right and resets the count: then read again).
 */
export async function gatedRecord(accountId) {
  const record = await deviceRecord(accountId);
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
      const key = await g.unwrapPrivateKey(gateKey, half.wrapped, context(record), half.publicKey, role);
      keys.set(await keyIdHex(half.publicKey), key);
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

/** Marks one counted attempt of this page as being checked; returns the function that settles it. */
function checkingAttempt(accountId) {
  let release;
  const settled = new Promise((resolve) => (release = resolve));
  if (!checking.has(accountId)) checking.set(accountId, new Set());
  checking.get(accountId).add(settled);
  return () => (checking.get(accountId).delete(settled), release());
}

/** One counted attempt with `method` and the wrapping key `makeKey()` derives. */
async function attempt(record, method, makeKey) {
  const { accountId } = record;
  const counted = await countAttempt(accountId);
  if (!counted) {
    const now = await deviceRecord(accountId);
    if (now && !now.gate && !now.wiped) throw new Error("The key gate was turned off in another window meanwhile.");
    // At the limit. A right attempt of this page, still being checked, may reset it: then this one is tried.
    if (await wipeAtLimit(accountId, method.kind)) throw refuse("wiped");
    return attempt(await gatedRecord(accountId), method, makeKey);
  }
  // Settled (released) before this attempt waits for a wipe itself, which waits for the others.
  const settle = checkingAttempt(accountId);
  try {
    let gateKey;
    let keys;
    try {
      [gateKey, keys] = await check(record, method, makeKey);
    } catch (error) {
      // Malformed: nothing was decrypted, so this attempt is not counted (others made meanwhile stay).
      if (error.malformed) await uncountAttempt(accountId);
      throw error;
    }
    if (!gateKey) {
      await report("unlock-failed", method.kind, accountId);
      settle();
      let n = g.attemptsLeft(counted);
      if (n <= 0) {
        if (await wipeAtLimit(accountId, method.kind)) throw refuse("wiped");
        // A right attempt of this page reset the count meanwhile.
        const now = (await deviceRecord(accountId))?.gate;
        n = now ? g.attemptsLeft(now) : 0;
      }
      throw refuse(method.kind === "prf" ? "wrong passkey" : "wrong password", n);
    }
    const reset = await changeGate(accountId, g.resetAttempts);
    if (reset) {
      remember(accountId, gateKey, keys, deadline());
      lastKind.set(accountId, method.kind);
      await report("unlocked", method.kind, accountId);
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

/**
 * A counted unlock with one of the gate's passkeys; returns the method and its wrapping key. `signIn`: no
 * session yet, so the passkey signs in too (`signedIn`: its Session), and a sign-in whose passkey opens
 * nothing here is signed out again: the browser stays locked.
 */
export async function openWithPasskey(accountId, { signIn = false } = {}) {
  const record = await gatedRecord(accountId);
  const methods = record.gate.methods.filter((m) => m.kind === "prf");
  const salts = new Map(methods.map((m) => [base64url(m.credentialId), m.prfSalt]));
  const { credentialId, prfOutput, signedIn } = await passkeyCeremony(salts, undefined, { signIn });
  const dropSession = () => signedIn && signOut(signedIn.token).catch(() => {});
  if (signedIn && signedIn.account?.id !== accountId) {
    dropSession();
    throw new Error("That passkey signs in to another account; this browser's keys are for another one.");
  }
  const method = methods.find((m) => same(m.credentialId, credentialId));
  try {
    if (!method) throw refuse("other passkey");
    if (!prfOutput) throw refuse("no prf");
    let key;
    await attempt(await gatedRecord(accountId), method, async () => (key = await g.prfWrappingKey(prfOutput)));
    return { method, key, signedIn };
  } catch (error) {
    dropSession();
    throw error;
  }
}

/** A counted unlock with the gate's password; returns the method and its wrapping key. */
export async function openWithPassword(accountId, password) {
  const record = await gatedRecord(accountId);
  const method = record.gate.methods.find((m) => m.kind === "password");
  if (!method) throw new Error("The key gate here has no password: unlock it with your passkey.");
  if (!password) throw new Error("Enter your password.");
  // Derived inside the attempt: the count is stored before the slow PBKDF2, so guesses made at once in
  // several windows each count.
  let key;
  const derive = async () => (key = await g.passwordWrappingKey(password, method.salt, method.iterations));
  await attempt(record, method, derive);
  return { method, key };
}

/**
 * One prompt for a password sign-in (SPEC §14.7): the password the server has just accepted opens a gate that
 * has the password method. Counted while it is checked, as every attempt is; a wrong one is given back, as the
 * server has just accepted this password (the gate keeps one changed in another browser): no guess. True when
 * it opened; false when it did not apply or did not open (the unlock prompt follows, as before).
 */
export async function unlockWithSignInPassword(accountId, password) {
  const record = await deviceRecord(accountId);
  const method = record?.gate?.methods.find((m) => m.kind === "password");
  if (!method || !password || isUnlocked(accountId) || g.attemptsLeft(record.gate) <= 0) return false;
  if (!(await countAttempt(accountId))) return false;
  const settle = checkingAttempt(accountId);
  try {
    const derive = () => g.passwordWrappingKey(password, method.salt, method.iterations);
    const [gateKey, keys] = await check(record, method, derive).catch(() => []);
    if (!gateKey) {
      await uncountAttempt(accountId);
      return false;
    }
    if (!(await changeGate(accountId, g.resetAttempts))) return false; // wiped by another window meanwhile
    remember(accountId, gateKey, keys, deadline());
    lastKind.set(accountId, method.kind);
    await report("unlocked", method.kind, accountId);
    return true;
  } finally {
    settle();
  }
}

/** Unlocks with a passkey of the gate: one prompt re-authenticates the session and gives the PRF output.
 *  Without a session (`signIn`), the prompt signs in instead: resolves with that Session. */
export async function unlockWithPasskey(accountId, { signIn = false } = {}) {
  return (await openWithPasskey(accountId, { signIn })).signedIn;
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
 * page goes back to sign-in with the words (main.js listens for the signal "wiped"). Resolves with true,
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
  const record = await deviceRecord(accountId);
  if (record?.gate && g.attemptsLeft(record.gate) > 0) return false;
  if (record?.gate) {
    await wipeDevice(accountId, { note: { deviceId: record.deviceId, revocationToken: record.gate.revocationToken } });
    await forgetAuthenticator(accountId);
    await report("wiped", method, accountId);
  } else {
    lock(accountId);
  }
  await finishSelfRevocation(accountId);
  try {
    await signOut();
  } catch {
    // Signed out here either way.
  }
  emit("wiped", REFUSALS.wiped());
  return true;
}

/**
 * Sends a kept self-revocation note (a wipe whose answer never came); deletes it once the server answers
 * (revoked, or 404: already gone). True when no note is left.
 */
export async function finishSelfRevocation(accountId) {
  const note = await deviceRecord(accountId);
  if (!note?.wiped) return true;
  try {
    await selfRevokeDevice(note.deviceId, { token: base64url(note.revocationToken) });
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) return false;
  }
  await forgetNote(accountId);
  return true;
}

// ---- Remote wipe

/**
 * Asks the server (with the account's session: a locked device cannot sign) whether this device was
 * revoked from elsewhere; if so, deletes its data here. True when it was.
 */
export async function wipedIfRevokedElsewhere(accountId) {
  const record = await deviceRecord(accountId);
  if (!record?.deviceId || record.wiped) return false;
  const { devices } = await listDevices();
  const mine = devices.find((d) => d.id === record.deviceId);
  if (!mine?.revokedAt) return false;
  await wipeDevice(accountId, { remote: true });
  if (record.gate) await report("wiped", record.gate.methods[0].kind, accountId);
  return true;
}

/** Resolves at the account's next unlock. */
export const nextUnlock = (accountId) =>
  new Promise((resolve) => {
    const off = on("gate-changed", (change) => change.accountId === accountId && change.unlocked && (off(), resolve()));
  });

/**
 * A new device session for the push channel (after 4403). While the gate is locked no key can sign: the
 * server is asked whether the device was revoked (a remote wipe), and otherwise the session waits for the
 * next unlock.
 */
export async function renewWhenUnlocked(accountId) {
  for (;;) {
    const record = await deviceRecord(accountId);
    if (!record?.gate || isUnlocked(accountId)) return renewDeviceSession(accountId);
    if (await wipedIfRevokedElsewhere(accountId)) {
      throw new ApiError(403, { code: "device-revoked", detail: WIPED_WORDS });
    }
    await nextUnlock(accountId);
  }
}
