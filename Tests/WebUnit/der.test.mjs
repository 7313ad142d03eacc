// der.js: the strict DER reader the key files go through (docs/SPEC.md §2.2–2.3), with the cases of
// Swift's KeyTests.derReaderIsStrict and the key files of Vectors/keys.
import assert from "node:assert/strict";
import test from "node:test";

import { DERError, keyName, OID, Reader, TAG } from "../../Sources/CountersignWebClient/web/js/der.js";
import { parsePEM } from "../../Sources/CountersignWebClient/web/js/pem.js";
import { text } from "./support/vectors.mjs";

const reader = (...bytes) => new Reader(Uint8Array.from(bytes));

test("reads short and long definite lengths", () => {
  assert.deepEqual(reader(0x04, 0x02, 7, 8).read(TAG.octetString), Uint8Array.of(7, 8));
  const long = new Uint8Array(3 + 200);
  long.set([0x04, 0x81, 200]);
  assert.equal(new Reader(long).read(TAG.octetString).length, 200);
  const longer = new Uint8Array(4 + 300);
  longer.set([0x04, 0x82, 0x01, 0x2c]);
  assert.equal(new Reader(longer).read(TAG.octetString).length, 300);
});

test("refuses what is not DER: Swift's derReaderIsStrict cases", () => {
  // A length not in its shortest form (0x81 0x05), and a length past the end.
  assert.throws(() => reader(0x04, 0x81, 0x05, 1, 2, 3, 4, 5).read(TAG.octetString), DERError);
  assert.throws(() => reader(0x04, 0x84, 0x7f, 0xff, 0xff, 0xff, 1).read(TAG.octetString), DERError);
  // An INTEGER with a needless leading zero, and a negative one.
  assert.throws(() => reader(0x02, 0x02, 0x00, 0x01).int(), DERError);
  assert.throws(() => reader(0x02, 0x01, 0x80).int(), DERError);
});

test("refuses indefinite, over-long and padded lengths, and elements that end early", () => {
  const cases = {
    "indefinite length (BER, not DER)": [0x30, 0x80, 0, 0],
    "a length of more than 4 bytes": [0x04, 0x85, 0, 0, 0, 0, 1],
    "length not in its shortest form": [0x04, 0x82, 0x00, 0x90, ...new Array(0x90).fill(0)],
    "ends early": [0x04, 0x05, 1, 2],
  };
  for (const [why, bytes] of Object.entries(cases)) {
    assert.throws(() => reader(...bytes).read(bytes[0]), { name: "Error", message: why }, why);
  }
  assert.throws(() => reader(0x04).read(TAG.octetString), /ends early/);
  assert.throws(() => reader().read(TAG.octetString), /ends early/);
});

test("a wrong tag is named", () => {
  assert.throws(() => reader(0x02, 0x01, 0x01).read(TAG.octetString), /expected tag 0x4, found 0x2/);
});

test("INTEGERs: shortest form, non-negative, at most 6 bytes", () => {
  assert.equal(reader(0x02, 0x01, 0x00).int(), 0);
  assert.equal(reader(0x02, 0x01, 0x7f).int(), 127);
  assert.equal(reader(0x02, 0x02, 0x00, 0x80).int(), 128);
  assert.equal(reader(0x02, 0x03, 0x01, 0x00, 0x00).int(), 65536);
  assert.equal(reader(0x02, 0x06, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff).int(), 0x7fffffffffff);
  assert.throws(() => reader(0x02, 0x00).int(), /an empty INTEGER/);
  assert.throws(() => reader(0x02, 0x02, 0xff, 0x80).int(), /not in its shortest form/);
  assert.throws(() => reader(0x02, 0x07, 0x01, 0, 0, 0, 0, 0, 0).int(), /out of range/);
});

test("NULL has no contents; end() refuses trailing bytes", () => {
  reader(0x05, 0x00).null();
  assert.throws(() => reader(0x05, 0x01, 0x00).null(), /NULL with contents/);
  const r = reader(0x05, 0x00, 0x00);
  r.null();
  assert.equal(r.atEnd, false);
  assert.throws(() => r.end(), /trailing bytes/);
});

test("optional() reads a field only when its tag is next", () => {
  const r = reader(0xa0, 0x01, 0x09, 0x04, 0x00);
  assert.equal(r.optional(0xa1), null);
  assert.deepEqual(r.optional(0xa0), Uint8Array.of(9));
  assert.deepEqual(r.read(TAG.octetString), new Uint8Array(0));
  assert.equal(r.optional(0xa0), null);
  r.end();
});

test("reads the SubjectPublicKeyInfo of an OpenSSL P-256 key (Vectors/keys/openssl-p256.pub.pem)", () => {
  const { der } = parsePEM(text("keys/openssl-p256.pub.pem"));
  const outer = new Reader(der);
  const spki = outer.enter(TAG.sequence);
  outer.end();
  const alg = spki.enter(TAG.sequence);
  assert.equal(alg.oid(), OID.ecPublicKey);
  assert.equal(alg.oid(), OID.prime256v1);
  alg.end();
  const bits = spki.read(TAG.bitString);
  spki.end();
  assert.equal(bits.length, 66);
  assert.deepEqual(bits.subarray(0, 2), Uint8Array.of(0, 4));
});

test("names each key type of Vectors/keys by its algorithm and curve", () => {
  const algorithmOf = (file) => {
    const alg = new Reader(parsePEM(text(`keys/${file}`)).der).enter(TAG.sequence).enter(TAG.sequence);
    const oid = alg.oid();
    return [oid, alg.peekTag === TAG.oid ? alg.oid() : null];
  };
  const names = {
    "openssl-p256.pub.pem": "a P-256 key",
    "p384.pub.pem": "a P-384 key",
    "rsa1024.pub.pem": "an RSA key",
    "ed25519.pub.pem": "an Ed25519 key",
    "x25519.pub.pem": "an X25519 key",
  };
  for (const [file, name] of Object.entries(names)) assert.equal(keyName(...algorithmOf(file)), name, file);
  assert.equal(keyName(OID.ecPublicKey, OID.secp521r1), "a P-521 key");
  assert.equal(keyName(OID.ecPublicKey, OID.secp256k1), "a secp256k1 key");
  assert.equal(keyName(OID.ecPublicKey, "2a03"), "an EC key on an unsupported curve");
  assert.equal(keyName("2a03", null), "a key of an unknown algorithm");
});
