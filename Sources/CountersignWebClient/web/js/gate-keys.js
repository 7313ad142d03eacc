// The key gate's memory (docs/SPEC.md §14.3, §14.4): while a gate is open, the gate key and the unwrapped,
// non-extractable private keys live here, in this page only, and the device record in IndexedDB holds
// each private key only wrapped. `keystore.js` passes every device record through `usable` when it reads
// and `storable` when it writes, so the rest of the client keeps using `record.signing.privateKey`: a
// CryptoKey when the gate is open (or off), null while it is locked.
//
// One unlock serves every tab of the profile (SPEC §14.7): a tab that opens a gate, or holds one open, hands
// the gate key and the unwrapped keys (CryptoKeys, non-extractable, cloned within this origin) to the tabs
// that ask over a BroadcastChannel; `lock` in one tab locks all. A tab drops its keys when the deadline given
// at `remember` passes (the account's re-authentication interval), on `lock`, and 30 seconds after it was
// hidden unless shown again (going from one tab to another carries the unlock; a profile left hidden for
// longer is locked).
import { hex, sha256 } from "./bytes.js";
import { spki } from "./device-keys.js";
import { emit, on } from "./events.js";
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

/** Every change is told as the signal "gate-changed" (events.js); `shared`: opened by another tab's unlock. */
const tell = (accountId, unlocked, shared = false) => emit("gate-changed", { accountId, unlocked, shared });

export async function keyIdHex(publicKey) {
  return hex((await sha256(await spki(publicKey))).subarray(0, 16));
}

/** How long a hidden tab keeps an open gate, for the tab shown next to ask for it. */
export const HIDDEN_GRACE_MS = 30_000;

const tabs =
  typeof BroadcastChannel === "function" && typeof document !== "undefined"
    ? new BroadcastChannel("countersign gate")
    : null;
/** The accounts this tab asked for: a gate another tab shares is taken only for one of them. */
const wanted = new Set();
/** When a lock last reached this tab, by account ("*": every account): a share of a gate opened before it
 *  is refused (messages from different tabs may arrive in any order). */
const lockedAt = new Map();
/** When this page was hidden, null while it is shown: timers do not run in a sleeping machine or a frozen
 *  tab, so the grace is also checked against the clock at each use. */
let hiddenAt = null;

/** Whether the account's gate is open now (its deadline not passed, and not hidden past the grace). */
export function isUnlocked(accountId) {
  const entry = open.get(accountId);
  if (hiddenAt !== null && Date.now() - hiddenAt >= HIDDEN_GRACE_MS) drop();
  else if (entry && Date.now() >= entry.until) drop(accountId);
  return open.has(accountId);
}

/** Drops the account's gate key and private keys from memory here (every account's without an argument). */
function drop(accountId) {
  for (const id of accountId === undefined ? [...open.keys()] : [accountId]) {
    const entry = open.get(id);
    if (!entry) continue;
    clearTimeout(entry.timer);
    entry.release();
    entry.keys.clear();
    open.delete(id);
    tell(id, false);
  }
}

/** Locks the account's gate (every account's without an argument) in this tab and in every other one. */
export function lock(accountId) {
  lockedHere(accountId);
  tabs?.postMessage({ kind: "lock", accountId });
}

function lockedHere(accountId) {
  lockedAt.set(accountId ?? "*", Date.now());
  drop(accountId);
}

/** Keeps an open gate here until `until`, without telling the other tabs; `openedAt`: when it was unlocked. */
function keep(accountId, gateKey, keys, until, openedAt = Date.now(), shared = false) {
  drop(accountId);
  const entry = { gateKey, keys, until, openedAt, timer: null, release: holdOpen(accountId) };
  // setTimeout's longest delay is 2^31 − 1 ms; a later deadline is checked at each use instead.
  const wait = until - Date.now();
  if (Number.isFinite(wait) && wait < 2 ** 31 - 1) entry.timer = setTimeout(() => drop(accountId), Math.max(0, wait));
  open.set(accountId, entry);
  tell(accountId, true, shared);
}

// While a tab holds an account's gate open it holds a shared Web Lock named after it, so that a tab asking
// for the gate waits for an answer only when some tab could give one (a lone locked reload does not wait).
const locks = globalThis.navigator?.locks ?? null;
const lockName = (accountId) => `countersign gate open ${accountId}`;

/** Holds the account's "gate open" lock until the function it returns is called. */
function holdOpen(accountId) {
  if (!locks) return () => {};
  let release;
  const held = new Promise((resolve) => (release = resolve));
  locks.request(lockName(accountId), { mode: "shared" }, () => held).catch(() => {});
  return release;
}

/** Whether a tab of this profile may hold the account's gate open (true when it cannot be known). */
async function someTabHoldsOpen(accountId) {
  if (!locks) return true;
  try {
    const { held = [] } = await locks.query();
    return held.some((lock) => lock.name === lockName(accountId));
  } catch {
    return true;
  }
}

/** Hands this tab's open gate of the account to the tabs that want it. */
function share(accountId) {
  if (!tabs || !isUnlocked(accountId)) return;
  const { gateKey, keys, until, openedAt } = open.get(accountId);
  tabs.postMessage({ kind: "share", accountId, gateKey, keys: [...keys], until, openedAt });
}

/**
 * Keeps an opened gate: its gate key and the private keys unwrapped with it (key ID hex → CryptoKey),
 * until `until` (a Date.now() value; Infinity for no deadline), and hands it to the profile's other tabs.
 */
export function remember(accountId, gateKey, keys, until = Infinity) {
  keep(accountId, gateKey, keys, until);
  share(accountId);
}

/** This tab shows `accountId`: it takes the gate another tab holds open for it, now and whenever one opens. */
export function want(accountId) {
  wanted.clear();
  if (accountId === undefined || accountId === null) return;
  wanted.add(accountId);
  if (!isUnlocked(accountId)) tabs?.postMessage({ kind: "ask", accountId });
}

/** Whether a share of `accountId`'s gate is one to keep here. */
function admits({ accountId, until, openedAt }) {
  const lastLock = Math.max(lockedAt.get(accountId) ?? -Infinity, lockedAt.get("*") ?? -Infinity);
  return (
    wanted.has(accountId) &&
    until > Date.now() &&
    openedAt > lastLock &&
    // A hidden tab asks when it is shown; one still holding the gate takes the keys made since (a rotation).
    (document.visibilityState !== "hidden" || open.has(accountId))
  );
}

tabs?.addEventListener("message", ({ data }) => {
  if (data?.kind === "lock") lockedHere(data.accountId);
  else if (data?.kind === "ask") share(data.accountId);
  else if (data?.kind === "share" && admits(data)) {
    keep(data.accountId, data.gateKey, new Map(data.keys), data.until, data.openedAt, true);
  }
});

/** `want`, then waits up to `waitMs` for a tab to hand over the gate (not at all when no tab holds it open):
 *  true once it is open here. */
export function askTabs(accountId, waitMs = 500) {
  want(accountId);
  if (!tabs || isUnlocked(accountId)) return Promise.resolve(isUnlocked(accountId));
  return new Promise((resolve) => {
    const finish = (opened) => {
      stop();
      clearTimeout(timer);
      resolve(opened);
    };
    const stop = on("gate-changed", (change) => change.accountId === accountId && change.unlocked && finish(true));
    const timer = setTimeout(() => finish(false), waitMs);
    // No tab holds it open: no answer is coming (one that opens it later still shares it: `want`).
    someTabHoldsOpen(accountId).then((maybe) => maybe || finish(isUnlocked(accountId)));
  });
}

// Hidden: the keys go after the grace unless the page is shown again; shown: ask for a gate another tab holds.
// Left (a navigation, the back-forward cache) or frozen: they go at once.
let hiddenTimer = null;
if (typeof document !== "undefined") {
  document.addEventListener("visibilitychange", () => {
    clearTimeout(hiddenTimer);
    if (document.visibilityState === "hidden") {
      hiddenAt = Date.now();
      hiddenTimer = setTimeout(() => drop(), HIDDEN_GRACE_MS);
      return;
    }
    if (hiddenAt !== null && Date.now() - hiddenAt >= HIDDEN_GRACE_MS) drop(); // a timer that never ran
    hiddenAt = null;
    for (const accountId of wanted) if (!isUnlocked(accountId)) tabs?.postMessage({ kind: "ask", accountId });
  });
  document.addEventListener("freeze", () => drop());
  window.addEventListener("pagehide", () => drop());
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
    share(record.accountId); // the other tabs get the new key too
    return { publicKey: pair.publicKey, wrapped };
  });
}
