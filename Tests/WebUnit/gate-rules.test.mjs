// gate-rules.js: the key gate's rules without keys, storage or server (docs/SPEC.md §14.4, §14.5): the
// refusals' words, until when an unlock stays open, the ways to unlock as the screens name them, which
// removals leave one that works, and the record the gate leaves when it is turned off.
import assert from "node:assert/strict";
import test from "node:test";

import { WEB } from "./support/web.mjs";

const rules = await import(`${WEB}js/gate-rules.js`);
const { base64url } = await import(`${WEB}js/bytes.js`);

const MINUTE = 60_000;

test("a refusal carries its kind, its words and the attempts left", () => {
  const wrong = rules.refuse("wrong password", 1);
  assert.ok(wrong instanceof rules.GateRefusal && wrong instanceof Error);
  assert.equal(wrong.name, "GateRefusal");
  assert.equal(wrong.kind, "wrong password");
  assert.equal(wrong.attemptsLeft, 1);
  assert.match(wrong.message, /^Wrong password: .* 1 attempt left before this browser deletes its keys\.$/);
  assert.match(rules.refuse("wrong passkey", 3).message, /3 attempts left/);
  assert.match(rules.refuse("wiped").message, new RegExp(rules.WIPED_WORDS.replace(/[.]/g, "\\.")));
  for (const kind of Object.keys(rules.REFUSALS)) assert.ok(rules.refuse(kind, 2).message.length > 20, kind);
});

test("an unlock stays open for the interval from the last authentication, or from now when it is due", () => {
  const authenticatedAt = 1_000 * MINUTE;
  const fresh = rules.unlockWindow({ intervalMinutes: 15, authenticatedAt, now: authenticatedAt + 5 * MINUTE });
  assert.deepEqual(fresh, { due: false, until: authenticatedAt + 15 * MINUTE });
  const now = authenticatedAt + 15 * MINUTE;
  assert.deepEqual(rules.unlockWindow({ intervalMinutes: 15, authenticatedAt, now }), {
    due: true,
    until: now + 15 * MINUTE,
  });
  for (const intervalMinutes of [0, undefined]) {
    const never = rules.unlockWindow({ intervalMinutes, authenticatedAt, now: now + 10_000 * MINUTE });
    assert.deepEqual(never, { due: false, until: Infinity });
  }
});

const passkeyA = { kind: "prf", credentialId: Uint8Array.of(1, 2, 3), prfSalt: new Uint8Array(32) };
const passkeyB = { kind: "prf", credentialId: Uint8Array.of(4, 5, 6), prfSalt: new Uint8Array(32) };
const password = { kind: "password", salt: new Uint8Array(16), iterations: 600_000 };
const idA = base64url(passkeyA.credentialId);
const idB = base64url(passkeyB.credentialId);

test("the ways to unlock are named from the account's passkeys; a removed one is not usable", () => {
  const passkeys = [{ credentialId: idA, name: "Yubi\u202Ekey" }];
  const described = rules.describeMethods([passkeyA, password, passkeyB], passkeys);
  assert.deepEqual(described, [
    { method: passkeyA, kind: "prf", credentialId: idA, label: "Passkey “Yubi<U+202E>key”", usable: true },
    { method: password, kind: "password", label: "Your password", usable: true },
    { method: passkeyB, kind: "prf", credentialId: idB, label: "A passkey removed from your account", usable: false },
  ]);
  assert.equal(rules.methodKey(password), "password");
  assert.equal(rules.methodKey(passkeyA), idA);
});

test("a way to unlock is removed only while one that works stays", () => {
  const methods = [passkeyA, passkeyB];
  const onlyA = rules.describeMethods(methods, [{ credentialId: idA, name: "A" }]);
  assert.equal(rules.removalLeavesOne(methods, passkeyB, onlyA), true);
  assert.equal(rules.removalLeavesOne(methods, passkeyA, onlyA), false);
  const withPassword = [...methods, password];
  const described = rules.describeMethods(withPassword, [{ credentialId: idA, name: "A" }]);
  assert.equal(rules.removalLeavesOne(withPassword, passkeyA, described), true);
});

test("removing an account's passkey: the gate's only usable way, one of several, or not the gate's", () => {
  const methods = [passkeyA, passkeyB];
  const both = rules.describeMethods(methods, [
    { credentialId: idA, name: "A" },
    { credentialId: idB, name: "B" },
  ]);
  assert.equal(rules.passkeyUse(methods, both, idA), "one");
  const onlyA = rules.describeMethods(methods, [{ credentialId: idA, name: "A" }]);
  assert.equal(rules.passkeyUse(methods, onlyA, idA), "only");
  assert.equal(rules.passkeyUse(methods, onlyA, "elsewhere"), null);
  const withPassword = [passkeyA, password];
  assert.equal(rules.passkeyUse(withPassword, rules.describeMethods(withPassword, []), idA), "one");
});

test("turned off, the record keeps the open keys unwrapped and drops older pairs whose keys are not open", () => {
  const half = (name, open = true) => ({
    publicKey: `${name}-pub`,
    privateKey: open ? `${name}-priv` : null,
    wrapped: {},
  });
  const record = {
    accountId: "acc",
    deviceId: "dev",
    gate: { version: 1 },
    signing: half("s"),
    encryption: half("e"),
    previous: [
      { signing: half("s1"), encryption: half("e1"), retiredAt: 5 },
      { signing: half("s2", false), encryption: half("e2"), retiredAt: 6 },
    ],
    pending: { signing: half("sp"), encryption: half("ep") },
  };
  const plain = (name) => ({ publicKey: `${name}-pub`, privateKey: `${name}-priv` });
  assert.deepEqual(rules.withoutGate(record), {
    accountId: "acc",
    deviceId: "dev",
    signing: plain("s"),
    encryption: plain("e"),
    previous: [{ signing: plain("s1"), encryption: plain("e1"), retiredAt: 5 }],
    pending: { signing: plain("sp"), encryption: plain("ep") },
  });
  const { pending: _none, ...settled } = record;
  assert.equal("pending" in rules.withoutGate(settled), false);
});

test("a gate's context is its account and device; same() compares bytes", () => {
  assert.deepEqual(rules.context({ accountId: "a", deviceId: "d", gate: {} }), { accountId: "a", deviceId: "d" });
  assert.equal(rules.same(Uint8Array.of(1, 2), Uint8Array.of(1, 2)), true);
  assert.equal(rules.same(Uint8Array.of(1, 2), Uint8Array.of(1, 3)), false);
  assert.equal(rules.same(Uint8Array.of(1), Uint8Array.of(1, 0)), false);
});
