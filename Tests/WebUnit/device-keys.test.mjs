// device-keys.js: the browser's device keys and the statements they sign (docs/PROTOCOL.md §1), each
// message rebuilt here the way DeviceProof.swift frames it (context || 0x00 || SHA-256(fields)), and
// signatures in the one form verifiers accept: r || s with low S (MessageEnvelopeTests.lowSBoundaries).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import test from "node:test";

import { concat, lv, utf8 } from "../../Sources/CountersignWebClient/web/js/bytes.js";
import {
  bindingMessage,
  keyIdOf,
  linkCode,
  makeDeviceKeys,
  Q,
  registrationMessage,
  resumptionMessage,
  revocationTokenMessage,
  rotationMessage,
  sessionMessage,
  signLowS,
  spki,
  verifyLowS,
  vouchMessage,
  endorsementMessage,
} from "../../Sources/CountersignWebClient/web/js/device-keys.js";
import { parsePEM } from "../../Sources/CountersignWebClient/web/js/pem.js";
import { pattern, text, toHex } from "./support/vectors.mjs";

/** DeviceProof.framed: the context's UTF-8, a zero byte, and the SHA-256 of the fields. */
const framed = (context, ...fields) =>
  concat(utf8(context), Uint8Array.of(0), createHash("sha256").update(concat(...fields)).digest());

const big = (bytes) => BigInt(`0x${toHex(bytes) || "0"}`);
const bytes32 = (n) => Uint8Array.from(Buffer.from(n.toString(16).padStart(64, "0"), "hex"));

test("Q is the order of the P-256 group", () => {
  assert.equal(Q, 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n);
});

test("device keys: ECDSA and ECDH on P-256, private halves non-extractable unless made for the gate", async () => {
  const keys = await makeDeviceKeys();
  assert.equal(keys.signing.privateKey.algorithm.name, "ECDSA");
  assert.equal(keys.encryption.privateKey.algorithm.name, "ECDH");
  assert.equal(keys.signing.privateKey.algorithm.namedCurve, "P-256");
  assert.equal(keys.signing.privateKey.extractable, false);
  assert.equal(keys.encryption.privateKey.extractable, false);
  assert.equal((await makeDeviceKeys(true)).signing.privateKey.extractable, true);
  const der = await spki(keys.signing.publicKey);
  assert.equal(der.length, 91);
  assert.equal(await keyIdOf(der), toHex(createHash("sha256").update(der).digest().subarray(0, 16)));
});

test("each statement is framed as DeviceProof.swift frames it", async () => {
  const [a, b, c] = [pattern(91, 1), pattern(91, 2), pattern(91, 3)];
  const challenge = pattern(32, 4);
  assert.deepEqual(
    await registrationMessage(challenge, "acc-1", a, b),
    framed("countersign/v1 device registration", challenge, lv(utf8("acc-1")), lv(a), lv(b)),
  );
  assert.deepEqual(
    await sessionMessage(challenge, "dev-1"),
    framed("countersign/v1 device session", challenge, lv(utf8("dev-1"))),
  );
  assert.deepEqual(
    await rotationMessage("dev-1", a, b, c),
    framed("countersign/v1 key rotation", lv(utf8("dev-1")), lv(a), lv(b), lv(c)),
  );
  const tokenHash = pattern(32, 5);
  assert.deepEqual(
    await revocationTokenMessage("dev-1", "acc-1", tokenHash),
    framed("countersign/v1 revocation token", lv(utf8("dev-1")), lv(utf8("acc-1")), lv(tokenHash)),
  );
  assert.deepEqual(
    await bindingMessage("acc-1", a),
    framed("countersign/v1 session binding", lv(utf8("acc-1")), lv(a)),
  );
  assert.deepEqual(
    await resumptionMessage(challenge, "sb_1"),
    framed("countersign/v1 session resumption", challenge, lv(utf8("sb_1"))),
  );
  assert.notDeepEqual(await resumptionMessage(challenge, "dev-1"), await sessionMessage(challenge, "dev-1"));
  // Each statement has its own context: the same fields never make the same message twice.
  assert.notDeepEqual(await sessionMessage(utf8("dev-1"), ""), await rotationMessage("", new Uint8Array(0), a, b));
});

// DeviceProof.vouchMessage and DeviceProof.linkCode (linking, PROTOCOL §1). Both are also checked against Swift:
// every vouch of key_pins.json verifies over vouchMessage (pins-vectors.test.mjs), and the browser tests approve
// a browser's link code with `countersign device approve --code`, which refuses a code its own linkCode differs from.
test("the vouch and the link code are framed as DeviceProof.swift frames them", async () => {
  const [a, b, c] = [pattern(91, 1), pattern(91, 2), pattern(91, 3)];
  // vouchedAt: 8 bytes, big-endian, two's complement (Swift's UInt64(bitPattern:) of an Int64).
  const time = Uint8Array.of(0, 0, 0, 0, 0x6b, 0x49, 0xd2, 0x00);
  assert.deepEqual(
    await vouchMessage({
      username: "bob",
      voucherDeviceId: "d1",
      voucherSigningSpki: a,
      deviceId: "d2",
      signingSpki: b,
      encryptionSpki: c,
      vouchedAt: 1_800_000_000,
    }),
    framed("countersign/v1 device vouch", lv(utf8("bob")), lv(utf8("d1")), lv(a), lv(utf8("d2")), lv(b), lv(c), time),
  );
  const before = await vouchMessage({
    username: "bob",
    voucherDeviceId: "d1",
    voucherSigningSpki: a,
    deviceId: "d2",
    signingSpki: b,
    encryptionSpki: c,
    vouchedAt: -1,
  });
  assert.deepEqual(before.subarray(-32), framed("", lv(utf8("bob")), lv(utf8("d1")), lv(a), lv(utf8("d2")), lv(b),
    lv(c), new Uint8Array(8).fill(0xff)).subarray(-32));
  // The approver endorsement: its own context, the endorser and its key, the approver and its signing key.
  assert.deepEqual(
    await endorsementMessage({
      username: "bob",
      endorserDeviceId: "d1",
      endorserSigningSpki: a,
      approverDeviceId: "d2",
      approverSigningSpki: b,
      endorsedAt: 1_800_000_000,
    }),
    framed("countersign/v1 approver endorsement", lv(utf8("bob")), lv(utf8("d1")), lv(a), lv(utf8("d2")), lv(b), time),
  );
  // Six groups of four digits: each the next 3 bytes of SHA-256(framed(...)) as a 24-bit number, mod 10,000.
  const digest = createHash("sha256").update(framed("countersign/v1 link code", lv(b), lv(c))).digest();
  const groups = [0, 1, 2, 3, 4, 5].map((i) => String(digest.readUIntBE(3 * i, 3) % 10_000).padStart(4, "0"));
  const code = await linkCode(b, c);
  assert.equal(code, groups.join(" "));
  assert.match(code, /^\d{4}( \d{4}){5}$/);
  // Either key changed changes the code; the keys' order matters.
  assert.notEqual(await linkCode(b, a), code);
  assert.notEqual(await linkCode(a, c), code);
  assert.notEqual(await linkCode(c, b), code);
});

test("signLowS always gives a low S that verifies; its high-S twin is refused by verifyLowS", async () => {
  const keys = await makeDeviceKeys();
  const der = await spki(keys.signing.publicKey);
  const message = utf8("sign me");
  const ecdsa = { name: "ECDSA", hash: "SHA-256" };
  for (let i = 0; i < 24; i++) {
    const signature = await signLowS(keys.signing.privateKey, message);
    assert.equal(signature.length, 64);
    const s = big(signature.subarray(32));
    assert.ok(s <= (Q - 1n) / 2n, "low S");
    assert.equal(await verifyLowS(der, message, signature), true);
    const twin = concat(signature.subarray(0, 32), bytes32(Q - s));
    assert.equal(await crypto.subtle.verify(ecdsa, keys.signing.publicKey, twin, message), true, "valid ECDSA");
    assert.equal(await verifyLowS(der, message, twin), false, "but not low S");
  }
});

test("verifyLowS refuses what is not a low-S signature by this key over this message", async () => {
  const keys = await makeDeviceKeys();
  const der = await spki(keys.signing.publicKey);
  const message = utf8("sign me");
  const signature = await signLowS(keys.signing.privateKey, message);
  const other = await spki((await makeDeviceKeys()).signing.publicKey);
  const cases = {
    "another message": [der, utf8("sign me!"), signature],
    "another key": [other, message, signature],
    "63 bytes": [der, message, signature.subarray(0, 63)],
    "r = 0": [der, message, concat(new Uint8Array(32), signature.subarray(32))],
    "r = q": [der, message, concat(bytes32(Q), signature.subarray(32))],
    "s = 0": [der, message, concat(signature.subarray(0, 32), new Uint8Array(32))],
    "a P-384 key": [parsePEM(text("keys/p384.pub.pem")).der, message, signature],
    "not a key": [Uint8Array.of(1, 2, 3), message, signature],
  };
  for (const [why, args] of Object.entries(cases)) assert.equal(await verifyLowS(...args), false, why);
  // s = (q − 1)/2 is the largest low S; (q + 1)/2 is high (lowSBoundaries).
  const r = signature.subarray(0, 32);
  assert.equal(await verifyLowS(der, message, concat(r, bytes32((Q + 1n) / 2n))), false);
});

test("keyIdOf takes only the 91-byte uncompressed SPKI of a P-256 key", async () => {
  const der = parsePEM(text("keys/openssl-p256.pub.pem")).der;
  assert.equal(await keyIdOf(der), toHex(createHash("sha256").update(der).digest().subarray(0, 16)));
  assert.equal(await keyIdOf(parsePEM(text("keys/openssl-p256-compressed.pub.pem")).der), null, "compressed");
  assert.equal(await keyIdOf(parsePEM(text("keys/p384.pub.pem")).der), null);
  const offCurve = der.slice();
  offCurve[90] ^= 1;
  assert.equal(await keyIdOf(offCurve), null);
  assert.equal(await keyIdOf(new Uint8Array(91)), null);
});
