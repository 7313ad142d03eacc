// gate-keys.js: the key gate's memory (docs/SPEC.md §14.3, §14.4): an open gate's keys live in the page
// only, until a deadline or lock(); a device record is stored with its private keys only wrapped, and read
// back with them from memory while the gate is open, null while it is locked.
import assert from "node:assert/strict";
import test from "node:test";

import * as g from "../../Sources/CountersignWebClient/web/js/gate-crypto.js";
import {
  isUnlocked,
  keyIdHex,
  lock,
  LockedError,
  remember,
  storable,
  usable,
} from "../../Sources/CountersignWebClient/web/js/gate-keys.js";
import { makeDeviceKeys } from "../../Sources/CountersignWebClient/web/js/device-keys.js";
import { on } from "../../Sources/CountersignWebClient/web/js/events.js";
import { pattern } from "./support/vectors.mjs";

/** An opened gate for `accountId`, with a device record whose keys were made for the gate. */
async function openedGate(accountId) {
  const context = { accountId, deviceId: `${accountId}-device` };
  const w = await g.prfWrappingKey(pattern(32, 1));
  const { gate, gateKey } = await g.createGate(w, g.prfMethod(pattern(16, 2), pattern(32, 3)), context);
  const keys = await makeDeviceKeys(true);
  return { context, gate, gateKey, record: { ...context, gate, signing: keys.signing, encryption: keys.encryption } };
}

test("a gate stays open until lock(), and tells its listeners", async () => {
  const { gateKey } = await openedGate("acc-listen");
  const seen = [];
  const stop = on("gate-changed", ({ accountId: id, unlocked }) => seen.push([id, unlocked]));
  remember("acc-listen", gateKey, new Map());
  assert.equal(isUnlocked("acc-listen"), true);
  lock("acc-listen");
  assert.equal(isUnlocked("acc-listen"), false);
  stop();
  remember("acc-listen", gateKey, new Map());
  lock();
  assert.equal(isUnlocked("acc-listen"), false, "lock() without an account locks every gate");
  assert.deepEqual(seen, [["acc-listen", true], ["acc-listen", false]]);
});

test("a gate past its deadline is locked when next asked, and by its timer", async () => {
  const { gateKey } = await openedGate("acc-deadline");
  remember("acc-deadline", gateKey, new Map(), Date.now() - 1);
  assert.equal(isUnlocked("acc-deadline"), false);
  remember("acc-deadline", gateKey, new Map(), Date.now() + 20);
  assert.equal(isUnlocked("acc-deadline"), true);
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.equal(isUnlocked("acc-deadline"), false);
});

test("stored, a record keeps its private keys only wrapped; read back open, they come from memory", async () => {
  const { gate, gateKey, record } = await openedGate("acc-store");
  await assert.rejects(storable(record), LockedError, "a locked gate wraps nothing");
  remember("acc-store", gateKey, new Map());
  const stored = await storable(record);
  for (const role of ["signing", "encryption"]) {
    assert.equal(stored[role].privateKey, undefined, `${role}: no private key in the clear`);
    assert.equal(stored[role].wrapped.nonce.length, 12);
    assert.equal(stored[role].publicKey, record[role].publicKey);
  }
  assert.equal(stored.gate, gate);
  const open = await usable(stored);
  for (const role of ["signing", "encryption"]) {
    assert.equal(open[role].privateKey.extractable, false, `${role}: the unwrapped copy`);
  }
  const message = new TextEncoder().encode("unlocked");
  const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, open.signing.privateKey, message);
  const ecdsa = { name: "ECDSA", hash: "SHA-256" };
  assert.ok(await crypto.subtle.verify(ecdsa, record.signing.publicKey, signature, message));
  lock("acc-store");
  const locked = await usable(stored);
  assert.equal(locked.signing.privateKey, null);
  assert.equal(locked.encryption.privateKey, null);
});

test("keys made before the gate are dropped, except the current pair while its rotation is pending", async () => {
  const { gateKey, record } = await openedGate("acc-old");
  remember("acc-old", gateKey, new Map());
  const old = await makeDeviceKeys(false);
  const fresh = await makeDeviceKeys(true);
  const before = { ...record, signing: old.signing, encryption: old.encryption };
  const previous = [{ signing: old.signing, encryption: old.encryption, retiredAt: 1 }];
  const dropped = await storable({ ...before, previous });
  assert.deepEqual(Object.keys(dropped.signing), ["publicKey"]);
  assert.deepEqual(Object.keys(dropped.previous[0].signing), ["publicKey"]);
  const pending = await storable({ ...before, pending: { signing: fresh.signing, encryption: fresh.encryption } });
  assert.equal(pending.signing.privateKey, old.signing.privateKey, "kept until the rotation completes");
  assert.ok(pending.pending.signing.wrapped, "the pending keys, made for the gate, are wrapped");
  lock("acc-old");
});

test("a record without a gate passes as it is", async () => {
  const keys = await makeDeviceKeys();
  const record = { accountId: "acc-plain", signing: keys.signing, encryption: keys.encryption };
  assert.equal(await storable(record), record);
  assert.equal(await usable(record), record);
  assert.equal(await usable(undefined), undefined);
  assert.match(await keyIdHex(keys.signing.publicKey), /^[0-9a-f]{32}$/);
});
