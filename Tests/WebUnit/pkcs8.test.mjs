// pkcs8.js: private key files (docs/SPEC.md §2.2), with the key files and cases of Swift's KeyTests
// (acceptsOpenSSLKeys, refusesRSAPrivateKeyAndLegacyEncryption, refusesHostileKDFParameters). scrypt runs
// in scrypt-worker.js as in the page, in a Node worker thread (support/worker.mjs).
import assert from "node:assert/strict";
import { createPrivateKey } from "node:crypto";
import test from "node:test";

import { concat, utf8 } from "../../Sources/CountersignWebClient/web/js/bytes.js";
import { OID, TAG } from "../../Sources/CountersignWebClient/web/js/der.js";
import { identityFromPKCS8 } from "../../Sources/CountersignWebClient/web/js/file-keys.js";
import { armor, parsePublicKey } from "../../Sources/CountersignWebClient/web/js/pem.js";
import { decryptPKCS8, isEncrypted, readPrivateKeyFile } from "../../Sources/CountersignWebClient/web/js/pkcs8.js";
import { fromHex, text } from "./support/vectors.mjs";
import { installWorker } from "./support/worker.mjs";

installWorker();

const passphrase = (words) => async () => utf8(words);
const noPassphrase = async () => assert.fail("no passphrase is asked for an unencrypted key");
const kindOf = async (body) => {
  try {
    await body();
    return "accepted";
  } catch (error) {
    return error.kind ?? `${error.name}: ${error.message}`;
  }
};
const pointOf = async (pkcs8) => (await identityFromPKCS8(pkcs8)).point;

// DER, written out for the hostile files below.
const length = (n) => (n < 128 ? [n] : n < 256 ? [0x81, n] : [0x82, n >> 8, n & 0xff]);
const tlv = (tag, body) => concat(Uint8Array.of(tag, ...length(body.length)), body);
const seq = (...parts) => tlv(TAG.sequence, concat(...parts));
const oid = (hex) => tlv(TAG.oid, fromHex(hex));
const octets = (bytes) => tlv(TAG.octetString, bytes);
function integer(n) {
  const bytes = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
  if (!bytes.length || bytes[0] & 0x80) bytes.unshift(0);
  return tlv(TAG.integer, Uint8Array.from(bytes));
}
const aes256 = seq(oid(OID.aes256CBC), octets(new Uint8Array(16)));
const encrypted = (kdf, scheme = aes256, ciphertext = new Uint8Array(32)) =>
  armor("ENCRYPTED PRIVATE KEY", seq(seq(oid(OID.pbes2), seq(kdf, scheme)), octets(ciphertext)));

test("OpenSSL's private key files all hold the public key's key (acceptsOpenSSLKeys)", async () => {
  const point = await parsePublicKey(text("keys/openssl-p256.pub.pem"));
  assert.deepEqual(await pointOf(await readPrivateKeyFile(text("keys/openssl-p256.key.pem"), noPassphrase)), point);
  const sec1 = await readPrivateKeyFile(text("keys/openssl-p256-sec1.key.pem"), noPassphrase);
  assert.deepEqual(await pointOf(sec1), point);
  for (const kdf of ["pbkdf2", "scrypt"]) {
    const file = text(`keys/openssl-p256-${kdf}.key.pem`);
    assert.equal(isEncrypted(file), true, kdf);
    assert.deepEqual(await pointOf(await readPrivateKeyFile(file, passphrase("hunter22"))), point, kdf);
    assert.equal(await kindOf(() => readPrivateKeyFile(file, passphrase("hunter23"))), "wrong passphrase", kdf);
  }
  assert.equal(isEncrypted(text("keys/openssl-p256.key.pem")), false);
  assert.equal(isEncrypted("not a PEM file"), false);
});

test("an RSA key and legacy encryption are refused (refusesRSAPrivateKeyAndLegacyEncryption)", async () => {
  await assert.rejects(readPrivateKeyFile(text("keys/rsa1024.key.pem"), noPassphrase), {
    kind: "wrong key type",
    message: "wrong key type: this is an RSA key, but a P-256 key is needed; make one with `countersign keygen`",
  });
  await assert.rejects(readPrivateKeyFile(text("keys/openssl-p256-3des.key.pem"), passphrase("hunter22")), (e) => {
    assert.equal(e.kind, "unsupported key encryption");
    assert.match(e.message, /PBES2/);
    return true;
  });
  const rsa = armor("RSA PRIVATE KEY", Uint8Array.of(1));
  assert.equal(await kindOf(() => readPrivateKeyFile(rsa, noPassphrase)), "wrong key type");
});

test("a public key where a private one is needed is refused as such", async () => {
  assert.equal(
    await kindOf(() => readPrivateKeyFile(text("keys/openssl-p256.pub.pem"), noPassphrase)),
    "public key where a private key is needed",
  );
  const certificate = armor("CERTIFICATE", Uint8Array.of(1));
  assert.equal(await kindOf(() => readPrivateKeyFile(certificate, noPassphrase)), "malformed PEM");
});

test("hostile KDF parameters are refused before any work, in Swift's words (refusesHostileKDFParameters)", async () => {
  const salt = octets(Uint8Array.of(1, 2, 3));
  const cases = {
    "scrypt parameters N=1073741824 r=8 p=1 are out of the accepted range": seq(
      oid(OID.scrypt),
      seq(salt, integer(2 ** 30), integer(8), integer(1)),
    ),
    "scrypt parameters N=1048576 r=32 p=1 are out of the accepted range": seq(
      oid(OID.scrypt),
      seq(salt, integer(2 ** 20), integer(32), integer(1)),
    ),
    "PBKDF2 iteration count 2147483648 is out of range": seq(oid(OID.pbkdf2), seq(salt, integer(2 ** 31))),
  };
  for (const [why, kdf] of Object.entries(cases)) {
    await assert.rejects(readPrivateKeyFile(encrypted(kdf), passphrase("x")), (e) => {
      assert.equal(e.kind, "unsupported key encryption", why);
      assert.ok(e.message.startsWith(`unsupported key encryption: ${why};`), e.message);
      return true;
    });
  }
});

test("malformed encrypted files are refused by class", async () => {
  const kdf = seq(oid(OID.pbkdf2), seq(octets(Uint8Array.of(1, 2, 3)), integer(1000)));
  const cases = {
    "a cipher other than AES-CBC": [
      encrypted(kdf, seq(oid(OID.hmacWithSHA256), octets(new Uint8Array(16)))),
      "unsupported key encryption",
    ],
    "an IV of 8 bytes": [encrypted(kdf, seq(oid(OID.aes256CBC), octets(new Uint8Array(8)))), "malformed key"],
    "a ciphertext of 31 bytes": [encrypted(kdf, aes256, new Uint8Array(31)), "malformed key"],
    "an unknown KDF": [
      encrypted(seq(oid(OID.hmacWithSHA1), seq(octets(Uint8Array.of(1))))),
      "unsupported key encryption",
    ],
    "not DER": [armor("ENCRYPTED PRIVATE KEY", Uint8Array.of(0x30, 0x80, 0, 0)), "malformed key file"],
    "an unsupported PRF": [
      encrypted(seq(oid(OID.pbkdf2), seq(octets(Uint8Array.of(1)), integer(1000), seq(oid(OID.aes128CBC))))),
      "unsupported key encryption",
    ],
    "a key length that is not the cipher's": [
      encrypted(seq(oid(OID.pbkdf2), seq(octets(Uint8Array.of(1)), integer(1000), integer(16)))),
      "malformed key",
    ],
  };
  for (const [why, [pem, kind]] of Object.entries(cases)) {
    assert.equal(await kindOf(() => readPrivateKeyFile(pem, passphrase("x"))), kind, why);
  }
});

// PBES2 with PBKDF2-HMAC-SHA-256 and AES-256-CBC, as Node's OpenSSL writes it.
test("a file Node's OpenSSL encrypts opens only with its passphrase", async () => {
  const pair = await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"]);
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", pair.privateKey));
  const point = new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey));
  const pem = createPrivateKey({ key: Buffer.from(pkcs8), format: "der", type: "pkcs8" }).export({
    format: "pem",
    type: "pkcs8",
    cipher: "aes-256-cbc",
    passphrase: "correct horse",
  });
  assert.deepEqual(await pointOf(await readPrivateKeyFile(pem, passphrase("correct horse"))), point);
  assert.equal(await kindOf(() => readPrivateKeyFile(pem, passphrase("correct horsf"))), "wrong passphrase");
  // The plain PKCS#8 WebCrypto wrote, and decryptPKCS8 on its own.
  assert.deepEqual(await pointOf(await readPrivateKeyFile(armor("PRIVATE KEY", pkcs8), noPassphrase)), point);
  const der = new Uint8Array(Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ""), "base64"));
  assert.equal((await decryptPKCS8(der, utf8("correct horse")))[0], 0x30);
});

test("a PrivateKeyInfo with trailing bytes or another curve is refused", async () => {
  const good = (await readPrivateKeyFile(text("keys/openssl-p256.key.pem"), noPassphrase)).slice();
  // The outer SEQUENCE's length grown by one, and a byte after it.
  const long = concat(Uint8Array.of(0x30, 0x81, good[2] + 1), good.subarray(3), Uint8Array.of(0));
  assert.equal(await kindOf(() => readPrivateKeyFile(armor("PRIVATE KEY", long), noPassphrase)), "malformed key");
  const p384 = seq(integer(0), seq(oid(OID.ecPublicKey), oid(OID.secp384r1)), octets(new Uint8Array(8)));
  await assert.rejects(readPrivateKeyFile(armor("PRIVATE KEY", p384), noPassphrase), { kind: "wrong key type" });
  const sec1WrongCurve = seq(integer(1), octets(new Uint8Array(32)), tlv(0xa0, oid(OID.secp256k1)));
  await assert.rejects(readPrivateKeyFile(armor("EC PRIVATE KEY", sec1WrongCurve), noPassphrase), {
    message: /this is a secp256k1 key/,
  });
  const sec1Short = seq(integer(1), octets(new Uint8Array(31)));
  const short = armor("EC PRIVATE KEY", sec1Short);
  assert.equal(await kindOf(() => readPrivateKeyFile(short, noPassphrase)), "malformed key");
});
