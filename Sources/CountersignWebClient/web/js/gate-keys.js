// The key gate's memory (docs/SPEC.md §14.3, §14.4): while a gate is open, the gate key and the unwrapped,
// non-extractable private keys live here, in this page only, and the device record in IndexedDB holds
// each private key only wrapped. `keystore.js` passes every device record through `usable` when it reads
// and `storable` when it writes, so the rest of the client keeps using `record.signing.privateKey`: a
// CryptoKey when the gate is open (or off), null while it is locked.
//
// The gate closes (every key dropped) when the page is hidden, when the deadline given at `remember`
// passes (the account's re-authentication interval), and on `lock`.
import { hex, sha256 } from "./bytes.js";
import { spki } from "./device-keys.js";
import { emit } from "./events.js";
import { unwrapPrivateKey, wrapPrivateKey } from "./gate-crypto.js";

/** A private key was needed while the gate is locked; the screens answer it with the unlock prompt. */
export class LockedError extends Error {
  constructor() {
    super("This browser's keys are locked. Unlock them with your passkey or password, then try again.");
    this.name = "LockedError";
  }
}

/** accountId → { gateKey, keys: Map(key ID hex → CryptoKey), until, timer } */
const open = new Map();

/** Every change is told as the signal "gate-changed" (events.js). */
const tell = (accountId, unlocked) => emit("gate-changed", { accountId, unlocked });

export async function keyIdHex(publicKey) {
  return hex((await sha256(await spki(publicKey))).subarray(0, 16));
}

/** Whether the account's gate is open now (its deadline not passed). */
export function isUnlocked(accountId) {
  const entry = open.get(accountId);
  if (entry && Date.now() >= entry.until) lock(accountId);
  return open.has(accountId);
}

/** Drops the account's gate key and private keys from memory (every account's without an argument). */
export function lock(accountId) {
  for (const id of accountId === undefined ? [...open.keys()] : [accountId]) {
    const entry = open.get(id);
    if (!entry) continue;
    clearTimeout(entry.timer);
    entry.keys.clear();
    open.delete(id);
    tell(id, false);
  }
}

/**
 * Keeps an opened gate: its gate key and the private keys unwrapped with it (key ID hex → CryptoKey),
 * until `until` (a Date.now() value; Infinity for no deadline).
 */
export function remember(accountId, gateKey, keys, until = Infinity) {
  lock(accountId);
  const entry = { gateKey, keys, until, timer: null };
  // setTimeout's longest delay is 2^31 − 1 ms; a later deadline is checked at each use instead.
  const wait = until - Date.now();
  if (Number.isFinite(wait) && wait < 2 ** 31 - 1) entry.timer = setTimeout(() => lock(accountId), Math.max(0, wait));
  open.set(accountId, entry);
  tell(accountId, true);
}

// The page hidden: every gate closes at once (LockWhisper's overlay drops decrypted text likewise).
if (typeof document !== "undefined") {
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") lock();
  });
}

const ROLES = ["signing", "encryption"];

/** `record` with `change(pair, role, place)` applied to each key pair: current, previous and pending. */
async function mapPairs(record, change) {
  const out = { ...record };
  for (const role of ROLES) if (record[role]) out[role] = await change(record[role], role, "current");
  if (record.pending) {
    out.pending = { ...record.pending };
    for (const role of ROLES) out.pending[role] = await change(record.pending[role], role, "pending");
  }
  if (record.previous) {
    out.previous = [];
    for (const old of record.previous) {
      const copy = { ...old };
      for (const role of ROLES) copy[role] = await change(old[role], role, "previous");
      out.previous.push(copy);
    }
  }
  return out;
}

/** The stored record as the page uses it: with the gate on, each private key from memory, or null. */
export async function usable(record) {
  if (!record?.gate || !record.signing) return record;
  const keys = isUnlocked(record.accountId) ? open.get(record.accountId).keys : new Map();
  return mapPairs(record, async (pair) => {
    if (!pair.wrapped) return pair;
    return { ...pair, privateKey: keys.get(await keyIdHex(pair.publicKey)) ?? null };
  });
}

/**
 * The record as IndexedDB may keep it. Without a gate: as given. With one, no private key in the clear:
 * a wrapped one keeps its wrap; a new one (extractable: made for the gate) is wrapped under the open gate
 * key and replaced in memory by its non-extractable unwrap; one made before the gate is deleted, except
 * the current pair while the rotation that turns the gate on is pending (SPEC §14.4).
 */
export async function storable(record) {
  if (!record?.gate || !record.signing) return record;
  const context = { accountId: record.accountId, deviceId: record.deviceId };
  return mapPairs(record, async (pair, role, place) => {
    if (pair.wrapped) return { publicKey: pair.publicKey, wrapped: pair.wrapped };
    if (!pair.privateKey) return { publicKey: pair.publicKey };
    if (!pair.privateKey.extractable) {
      if (place === "current" && record.pending) return pair;
      return { publicKey: pair.publicKey };
    }
    if (!isUnlocked(record.accountId)) throw new LockedError();
    const entry = open.get(record.accountId);
    const wrapped = await wrapPrivateKey(entry.gateKey, pair, context);
    entry.keys.set(
      await keyIdHex(pair.publicKey),
      await unwrapPrivateKey(entry.gateKey, wrapped, context, pair.publicKey, role),
    );
    return { publicKey: pair.publicKey, wrapped };
  });
}
