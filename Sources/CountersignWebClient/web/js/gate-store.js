// The key gate as IndexedDB keeps it (docs/SPEC.md §14.5): in the account's device record (keystore.js),
// changed only in one readwrite transaction, so attempts and changes made at once, in this page or another,
// each start from the one before.
import * as g from "./gate-crypto.js";
import { keystore } from "./keystore.js";

/** The account's device record, private keys as the open gate has them (keystore.js, gate-keys.js). */
export const deviceRecord = (accountId) => keystore.device(accountId);

/**
 * Stores `change(gate)` as the account's gate, read and written in one transaction (keystore.updateGate):
 * a count made meanwhile in another window is kept. Without a gate (wiped meanwhile) nothing is stored.
 * Resolves with the gate as stored, or null.
 */
export const changeGate = (accountId, change) =>
  keystore.updateGate(accountId, (gate) => (gate ? g.checkGate(change(gate)) : null));

/**
 * Counts one attempt (SPEC §14.5): `failures + 1` stored before anything is checked, read and written in one
 * transaction, so attempts made at once (in this window or another) each count. Resolves with the gate as
 * counted, or null when nothing may be tried: the limit was reached, or the gate is gone (wiped).
 */
export async function countAttempt(accountId) {
  let counted = false;
  const gate = await keystore.updateGate(accountId, (stored) => {
    if (!stored || g.attemptsLeft(stored) <= 0) return null;
    counted = true;
    return g.countAttempt(stored);
  });
  return counted ? gate : null;
}

/** Takes back one counted attempt (a malformed one: nothing was decrypted); others made meanwhile stay. */
export const uncountAttempt = (accountId) =>
  changeGate(accountId, (gate) => ({ ...gate, failures: Math.max(0, gate.failures - 1) }));

/** The record without its gate: a turn-on whose rotation never settled is undone (its keys still work,
 *  unwrapped, so the gate was never on). */
export async function undoTurnOn(record) {
  const { gate: _undone, ...plain } = record;
  await keystore.save(plain);
}

/** Stores the record the gate being turned off leaves (gate-rules.js's withoutGate). */
export const saveWithoutGate = (record) => keystore.save(record);

/** Forgets the self-revocation note (or anything else kept) for the account. */
export const forgetNote = (accountId) => keystore.remove(accountId);
