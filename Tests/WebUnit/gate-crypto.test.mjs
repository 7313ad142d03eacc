// gate-crypto.js: the key gate's cryptography (docs/SPEC.md §14), checked against Node's own HKDF, PBKDF2
// and AES-GCM (node:crypto, an implementation apart from WebCrypto's API), both ways: the gate's wraps open
// under the spec's derivations and associated data, wraps made here from the spec open in the gate, and
// every change (a flipped bit, other IDs, another kind) is refused by its class. The browser test
// Tests/Web/tests_gate_crypto.py checks the same against Python's `cryptography` in Chromium.
import assert from "node:assert/strict";
import { createCipheriv, createDecipheriv, createHash, hkdfSync, pbkdf2Sync, randomBytes } from "node:crypto";
import test from "node:test";

import { concat, lv, utf8 } from "../../Sources/CountersignWebClient/web/js/bytes.js";
import * as g from "../../Sources/CountersignWebClient/web/js/gate-crypto.js";
import { flip, pattern } from "./support/vectors.mjs";

const ACCOUNT = "gate-0b8f4c2e-account";
const DEVICE = "gate-5d1a7e90-device";
const ctx = { accountId: ACCOUNT, deviceId: DEVICE };

// The spec's derivations and associated data, written again from SPEC §14.1–14.2.
const prfKey = (prf) => new Uint8Array(hkdfSync("sha256", prf, new Uint8Array(0), "countersign/v1 gate prf", 32));
const passwordKey = (password, salt, n) => new Uint8Array(pbkdf2Sync(utf8(password), salt, n, 32, "sha256"));
const gateKeyAad = (account, device, kind, credential = new Uint8Array(0)) =>
  concat(
    utf8("countersign/v1 gate key"),
    Uint8Array.of(0),
    lv(utf8(account)),
    lv(utf8(device)),
    lv(utf8(kind)),
    lv(credential),
  );
const privateKeyAad = (account, device, spki) =>
  concat(
    utf8("countersign/v1 gate private key"),
    Uint8Array.of(0),
    lv(utf8(account)),
    lv(utf8(device)),
    lv(createHash("sha256").update(spki).digest().subarray(0, 16)),
  );

function seal(key, nonce, plaintext, aad) {
  const c = createCipheriv("aes-256-gcm", key, nonce).setAAD(aad);
  return new Uint8Array(Buffer.concat([c.update(plaintext), c.final(), c.getAuthTag()]));
}
function unseal(key, nonce, sealed, aad) {
  const d = createDecipheriv("aes-256-gcm", key, nonce).setAAD(aad);
  d.setAuthTag(sealed.subarray(sealed.length - 16));
  try {
    return new Uint8Array(Buffer.concat([d.update(sealed.subarray(0, sealed.length - 16)), d.final()]));
  } catch {
    return null;
  }
}

const kindOf = async (body) => {
  try {
    await body();
    return "opened";
  } catch (error) {
    return error instanceof g.GateError ? error.kind : `${error.name}: ${error.message}`;
  }
};

test("the wrapping keys are HKDF of the PRF output and PBKDF2 of the password, and cannot be read", async () => {
  const prf = pattern(32, 1);
  const salt = pattern(16, 2);
  const [known, nonce, aad] = [pattern(32, 3), new Uint8Array(12), utf8("gate vector")];
  const knownKey = await crypto.subtle.importKey("raw", known, "AES-GCM", true, ["encrypt"]);
  const wrapWith = async (w) =>
    new Uint8Array(
      await crypto.subtle.wrapKey("raw", knownKey, w, { name: "AES-GCM", iv: nonce, additionalData: aad }),
    );
  const w = await g.prfWrappingKey(prf);
  assert.deepEqual(await wrapWith(w), seal(prfKey(prf), nonce, known, aad));
  for (const [password, n] of [["correct horse battery", 1000], ["p\u00e4ssw\u00f6rd \u2603 \u{1F511}", 1]]) {
    const wrapped = await wrapWith(await g.passwordWrappingKey(password, salt, n));
    assert.deepEqual(wrapped, seal(passwordKey(password, salt, n), nonce, known, aad));
  }
  assert.equal(w.extractable, false);
  assert.deepEqual([...w.usages].sort(), ["unwrapKey", "wrapKey"]);
  await assert.rejects(crypto.subtle.exportKey("raw", w), { name: /^InvalidAccess/ });
});

test("a gate's wraps open under the spec's derivations and only under their own IDs", async () => {
  const [prf, credential, prfSalt] = [pattern(32, 4), pattern(20, 5), pattern(32, 6)];
  const [prf2, credential2] = [pattern(32, 7), pattern(16, 8)];
  const w = await g.prfWrappingKey(prf);
  const { gate, gateKey } = await g.createGate(w, g.prfMethod(credential, prfSalt), ctx);
  assert.deepEqual([gate.version, gate.limit, gate.failures, gate.revocationToken.length], [1, 5, 0, 32]);
  // A second passkey added with one unlock by the first.
  const w2 = await g.prfWrappingKey(prf2);
  const second = await g.rewrapMethod(w, gate.methods[0], w2, g.prfMethod(credential2, prfSalt), ctx);
  const full = g.checkGate({ ...gate, methods: [...gate.methods, second] });
  const [a, b] = full.methods;
  const opened = unseal(prfKey(prf), a.nonce, a.wrappedKey, gateKeyAad(ACCOUNT, DEVICE, "prf", credential));
  assert.equal(opened?.length, 32);
  const byTheSecond = unseal(prfKey(prf2), b.nonce, b.wrappedKey, gateKeyAad(ACCOUNT, DEVICE, "prf", credential2));
  assert.deepEqual(byTheSecond, opened);
  for (const aad of [
    gateKeyAad(`${ACCOUNT}x`, DEVICE, "prf", credential),
    gateKeyAad(ACCOUNT, `${DEVICE}x`, "prf", credential),
    gateKeyAad(ACCOUNT, DEVICE, "prf", credential2),
    gateKeyAad(ACCOUNT, DEVICE, "password"),
    gateKeyAad(DEVICE, ACCOUNT, "prf", credential),
  ]) {
    assert.equal(unseal(prfKey(prf), a.nonce, a.wrappedKey, aad), null);
  }
  // Each private key: its PKCS#8 under the gate key, bound to its own key ID; every nonce its own.
  const nonces = new Set([a.nonce, b.nonce].map(String));
  for (const [name, usages] of [["ECDSA", ["sign", "verify"]], ["ECDH", ["deriveBits"]]]) {
    const pair = await crypto.subtle.generateKey({ name, namedCurve: "P-256" }, true, usages);
    const wrapped = await g.wrapPrivateKey(gateKey, pair, ctx);
    const spki = new Uint8Array(await crypto.subtle.exportKey("spki", pair.publicKey));
    const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", pair.privateKey));
    assert.deepEqual(unseal(opened, wrapped.nonce, wrapped.ciphertext, privateKeyAad(ACCOUNT, DEVICE, spki)), pkcs8);
    assert.equal(unseal(opened, wrapped.nonce, wrapped.ciphertext, privateKeyAad(`${ACCOUNT}x`, DEVICE, spki)), null);
    nonces.add(String(wrapped.nonce));
  }
  assert.equal(nonces.size, 4);
  assert.equal(gateKey.extractable, false);
  await assert.rejects(crypto.subtle.exportKey("raw", gateKey), { name: /^InvalidAccess/ });
});

test("wraps made from the spec unlock here, by passkey or password, and every change is refused", async () => {
  const random = (n) => new Uint8Array(randomBytes(n));
  const [prf, credential, prfSalt, pwSalt, token, gateKeyBytes] = [32, 16, 32, 16, 32, 32].map(random);
  const password = "correct horse battery";
  const prfNonce = new Uint8Array(randomBytes(12));
  const pwNonce = new Uint8Array(randomBytes(12));
  const prfM = {
    kind: "prf", credentialId: credential, prfSalt, nonce: prfNonce,
    wrappedKey: seal(prfKey(prf), prfNonce, gateKeyBytes, gateKeyAad(ACCOUNT, DEVICE, "prf", credential)),
  };
  const pwM = {
    kind: "password", salt: pwSalt, iterations: 600_000, nonce: pwNonce,
    wrappedKey: seal(
      passwordKey(password, pwSalt, 600_000),
      pwNonce,
      gateKeyBytes,
      gateKeyAad(ACCOUNT, DEVICE, "password"),
    ),
  };
  const gate = g.checkGate({ version: 1, limit: 5, failures: 0, revocationToken: token, methods: [prfM, pwM] });
  const pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]);
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", pair.publicKey));
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", pair.privateKey));
  const keyNonce = new Uint8Array(randomBytes(12));
  const sW = { nonce: keyNonce, ciphertext: seal(gateKeyBytes, keyNonce, pkcs8, privateKeyAad(ACCOUNT, DEVICE, spki)) };

  const w = await g.prfWrappingKey(prf);
  const gk = await g.openGate(w, prfM, ctx);
  const sk = await g.unwrapPrivateKey(gk, sW, ctx, pair.publicKey, "signing");
  assert.equal(sk.extractable, false);
  const message = utf8("gate unlocked");
  const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, sk, message);
  assert.ok(await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, pair.publicKey, signature, message));
  const byPassword = await g.openGate(await g.passwordWrappingKey(password, pwSalt, 600_000), pwM, ctx);
  await g.unwrapPrivateKey(byPassword, sW, ctx, pair.publicKey, "signing");

  const bits = {};
  for (const field of ["nonce", "wrappedKey"]) {
    for (let i = 0; i < prfM[field].length * 8; i++) {
      const kind = await kindOf(() => g.openGate(w, { ...prfM, [field]: flip(prfM[field], i) }, ctx));
      bits[kind] = (bits[kind] ?? 0) + 1;
    }
  }
  assert.deepEqual(bits, { "unlock failed": 96 + 384 });
  const other = await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"]);
  const refusals = {
    otherAccount: () => g.openGate(w, prfM, { ...ctx, accountId: `${ACCOUNT}x` }),
    otherDevice: () => g.openGate(w, prfM, { ...ctx, deviceId: `${DEVICE}x` }),
    swappedIds: () => g.openGate(w, prfM, { accountId: DEVICE, deviceId: ACCOUNT }),
    otherCredential: () => g.openGate(w, { ...prfM, credentialId: flip(credential, 0) }, ctx),
    passkeyWrapFiledAsPassword: () => g.openGate(w, { ...pwM, nonce: prfM.nonce, wrappedKey: prfM.wrappedKey }, ctx),
    wrongPrfOutput: async () => g.openGate(await g.prfWrappingKey(flip(prf, 0)), prfM, ctx),
    keyTag: () => {
      const tagFlipped = { ...sW, ciphertext: flip(sW.ciphertext, sW.ciphertext.length * 8 - 1) };
      return g.unwrapPrivateKey(gk, tagFlipped, ctx, pair.publicKey, "signing");
    },
    keyOtherDevice: () => g.unwrapPrivateKey(gk, sW, { ...ctx, deviceId: `${DEVICE}x` }, pair.publicKey, "signing"),
    keyUnderAnotherKeysId: () => g.unwrapPrivateKey(gk, sW, ctx, other.publicKey, "signing"),
  };
  for (const [why, body] of Object.entries(refusals)) assert.equal(await kindOf(body), "unlock failed", why);

  const method = (change) => kindOf(() => g.checkMethod({ ...prfM, ...change }));
  const gated = (change) => kindOf(() => g.checkGate({ ...gate, ...change }));
  const unwrap = (wrapped, role = "signing") =>
    kindOf(() => g.unwrapPrivateKey(gk, wrapped, ctx, pair.publicKey, role));
  const nonExtractable = await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, false, ["deriveBits"]);
  const malformed = {
    prfShort: await kindOf(() => g.prfWrappingKey(prf.subarray(1))),
    prfZeros: await kindOf(() => g.prfWrappingKey(new Uint8Array(32))),
    prfNotBytes: await kindOf(() => g.prfWrappingKey(Array.from(prf))),
    passwordEmpty: await kindOf(() => g.passwordWrappingKey("", pwSalt, 1000)),
    passwordIterationsFraction: await kindOf(() => g.passwordWrappingKey("pw", pwSalt, 1000.5)),
    nonceShort: await method({ nonce: new Uint8Array(11) }),
    credentialShort: await method({ credentialId: new Uint8Array(15) }),
    kindOther: await method({ kind: "pin" }),
    iterationsBelowOwasp: await kindOf(() => g.checkMethod({ ...pwM, iterations: 599_999 })),
    gateVersionZero: await gated({ version: 0 }),
    limitTwo: await gated({ limit: 2 }),
    failuresPastLimit: await gated({ failures: 6 }),
    noMethods: await gated({ methods: [] }),
    twoPasswords: await gated({ methods: [prfM, pwM, pwM] }),
    onePasskeyTwice: await gated({ methods: [prfM, { ...prfM }] }),
    accountEmpty: await kindOf(() => g.openGate(w, prfM, { ...ctx, accountId: "" })),
    roleOther: await unwrap(sW, "hmac"),
    keyCiphertextShort: await unwrap({ ...sW, ciphertext: new Uint8Array(16) }),
    nonExtractableKey: await kindOf(() => g.wrapPrivateKey(gk, nonExtractable, ctx)),
  };
  assert.deepEqual(malformed, Object.fromEntries(Object.keys(malformed).map((k) => [k, "malformed"])));
  assert.equal(await gated({ version: 2 }), "unknown version");
});

test("failed attempts are counted ahead, capped at the limit and reset by a success", () => {
  const gate = {
    version: 1, limit: 3, failures: 0, revocationToken: new Uint8Array(32),
    methods: [
      {
        kind: "prf",
        credentialId: new Uint8Array(16),
        prfSalt: new Uint8Array(32),
        nonce: new Uint8Array(12),
        wrappedKey: new Uint8Array(48),
      },
    ],
  };
  let counted = gate;
  const left = [];
  for (let i = 0; i < 4; i++) {
    left.push(g.attemptsLeft(counted));
    counted = g.countAttempt(counted);
  }
  left.push(g.attemptsLeft(counted), g.resetAttempts(counted).failures, counted.failures);
  assert.deepEqual(left, [3, 2, 1, 0, 0, 0, 3]);
  assert.equal(g.passwordMethod().iterations, g.PBKDF2_ITERATIONS);
  assert.equal(g.passwordMethod().salt.length, 16);
});
