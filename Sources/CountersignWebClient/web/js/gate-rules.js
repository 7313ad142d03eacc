// The key gate's rules that need no key, no storage and no server (docs/SPEC.md §14.4, §14.5): why an
// unlock or a setup was refused, in words; until when an unlock stays open; what the screens say of each
// way to unlock; which removals leave one that works; the record as it is stored once the gate is off.
// Pure: the cryptography is gate-crypto.js, the stored gate gate-store.js, the state machine gate.js.
import { base64url } from "./bytes.js";
import { visibleText } from "./display-name.js";

/** Words for a device whose data here was deleted (the gate's limit, or a remote wipe). */
export const WIPED_WORDS = "This browser deleted its keys and messages for the account.";

/** Why an unlock or a setup did not happen, in words for the screen. `kind` is one of REFUSALS' keys. */
export class GateRefusal extends Error {
  constructor(kind, message, attemptsLeft) {
    super(message);
    this.name = "GateRefusal";
    this.kind = kind;
    this.attemptsLeft = attemptsLeft;
  }
}

const left = (n) => `${n} ${n === 1 ? "attempt" : "attempts"} left before this browser deletes its keys.`;

/** Each refusal's words, given the attempts left where they count. */
export const REFUSALS = {
  "wrong passkey": (n) => `Wrong passkey: it does not unlock the keys kept here. ${left(n)}`,
  "wrong password": (n) => `Wrong password: it does not unlock the keys kept here. ${left(n)}`,
  "not verified": () =>
    "The passkey did not verify you (no fingerprint, face or PIN), so nothing was tried. Try again.",
  cancelled: () =>
    "The passkey did not answer: the prompt was cancelled, timed out, or could not verify you. Nothing was tried.",
  "no prf": () =>
    "This passkey's authenticator has no PRF (it gives this browser no secret), so it cannot lock or unlock " +
    "the keys here.",
  "other passkey": () =>
    "None of your passkeys that unlock the keys in this browser answered: use one listed under Key gate → " +
    "Ways to unlock, or the password if it is listed.",
  "no passkeys": () => "Your account has no passkey yet. Add one first, or lock the keys with your password.",
  "all passkeys": () =>
    "Every passkey of your account already unlocks the keys here. Add a passkey to your account first " +
    "(Passkeys, above).",
  wiped: () =>
    `Too many failed attempts to unlock. ${WIPED_WORDS} Its device revoked itself: sign in again to set this ` +
    "browser up as a new device.",
};

export const refuse = (kind, attemptsLeft) => new GateRefusal(kind, REFUSALS[kind](attemptsLeft), attemptsLeft);

/** The IDs a gate's wraps are bound to (SPEC §14.2). */
export const context = (record) => ({ accountId: record.accountId, deviceId: record.deviceId });

/** Whether two byte arrays hold the same bytes. */
export const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * The re-authentication interval's clock: `intervalMinutes` (0: "Never"), the last sign-in or
 * re-authentication at `authenticatedAt`, the time `now` (all in ms but the interval).
 * - `due`: the interval has run out since then;
 * - `until`: until when an unlock made now stays open: the interval from the last authentication (or from
 *   now, when this unlock is the re-authentication), no deadline (Infinity) with the interval "Never".
 */
export function unlockWindow({ intervalMinutes, authenticatedAt, now }) {
  const interval = (intervalMinutes ?? 0) * 60_000;
  const due = interval > 0 && now - authenticatedAt >= interval;
  return { due, until: interval > 0 ? (due ? now : authenticatedAt) + interval : Infinity };
}

/** What identifies a way to unlock: "password", or the passkey's credential ID in base64url. */
export const methodKey = (method) => (method.kind === "password" ? "password" : base64url(method.credentialId));

/**
 * The gate's methods with words for the screen, given the account's passkeys ([{ credentialId, name }]):
 * [{ method, kind, label, usable, credentialId (base64url, passkeys) }]. A passkey removed from the account
 * is never offered by the server again: it says so and is not usable.
 */
export function describeMethods(methods, passkeys) {
  const names = new Map(passkeys.map((p) => [p.credentialId, p.name]));
  return methods.map((method) => {
    if (method.kind === "password") return { method, kind: "password", label: "Your password", usable: true };
    const id = base64url(method.credentialId);
    const name = names.get(id);
    const label = name ? `Passkey “${visibleText(name)}”` : "A passkey removed from your account";
    return { method, kind: "prf", credentialId: id, label, usable: names.has(id) };
  });
}

/** Whether the gate's methods without `method` still hold one of the `usable` ones (described methods). */
export function removalLeavesOne(methods, method, described) {
  const usable = new Set(described.filter((m) => m.usable).map((m) => methodKey(m.method)));
  return methods.some((m) => methodKey(m) !== methodKey(method) && usable.has(methodKey(m)));
}

/**
 * What removing the account's passkey `credentialId` (base64url) does to the gate with `methods`: "only"
 * when it is the gate's only usable way to unlock, "one" when another usable one stays, null when the gate
 * does not use it.
 */
export function passkeyUse(methods, described, credentialId) {
  if (!methods.some((m) => m.kind === "prf" && base64url(m.credentialId) === credentialId)) return null;
  return described.some((m) => m.usable && m.credentialId !== credentialId) ? "one" : "only";
}

/**
 * The device record as the gate being turned off stores it: the keys of the open gate (`record` read while
 * it is open) unwrapped, non-extractable, as before the gate; older pairs whose keys are not open dropped.
 */
export function withoutGate(record) {
  const plain = (half) => ({ publicKey: half.publicKey, privateKey: half.privateKey });
  const pair = (p) => ({ ...p, signing: plain(p.signing), encryption: plain(p.encryption) });
  const { gate: _off, ...rest } = record;
  const out = {
    ...pair(rest),
    previous: (record.previous ?? []).filter((p) => p.signing.privateKey && p.encryption.privateKey).map(pair),
  };
  if (record.pending) out.pending = pair(record.pending);
  return out;
}
