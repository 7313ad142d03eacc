// pem.js: PEM armor and public key files in both forms (docs/SPEC.md §2.3), with the key files and the
// cases of Swift's KeyTests (acceptsOpenSSLKeys, refusesOtherKeyTypesByName, refusesMalformedPEM,
// refusesInvalidPoints, fileLockPEMIsRawPointWithCRLF, spkiRoundTripAndFingerprint).
import assert from "node:assert/strict";
import test from "node:test";

import { hex } from "../../Sources/CountersignWebClient/web/js/bytes.js";
import {
  armor,
  fingerprintText,
  keyIdOf,
  parsePEM,
  parsePublicKey,
  pointOfSPKI,
  publicPEM,
  spkiOf,
  validPoint,
} from "../../Sources/CountersignWebClient/web/js/pem.js";
import { fromHex, json, keyPair, text } from "./support/vectors.mjs";

const kindOf = async (body) => {
  try {
    await body();
    return "accepted";
  } catch (error) {
    return error.kind ?? `${error.name}: ${error.message}`;
  }
};

test("an OpenSSL public key reads the same in SPKI and compressed form (acceptsOpenSSLKeys)", async () => {
  const point = await parsePublicKey(text("keys/openssl-p256.pub.pem"));
  assert.equal(point.length, 65);
  assert.equal(point[0], 4);
  assert.deepEqual(await parsePublicKey(text("keys/openssl-p256-compressed.pub.pem")), point);
  // The point is the one in the file's SPKI, and spkiOf rebuilds that SPKI byte for byte.
  assert.deepEqual(spkiOf(point), parsePEM(text("keys/openssl-p256.pub.pem")).der);
});

test("other key types are refused by name (refusesOtherKeyTypesByName)", async () => {
  const cases = {
    "p384.pub.pem": "a P-384 key",
    "rsa1024.pub.pem": "an RSA key",
    "ed25519.pub.pem": "an Ed25519 key",
    "x25519.pub.pem": "an X25519 key",
  };
  for (const [file, name] of Object.entries(cases)) {
    await assert.rejects(parsePublicKey(text(`keys/${file}`)), (e) => {
      assert.equal(e.kind, "wrong key type", file);
      const advice = "but a P-256 key is needed; make one with `countersign keygen`";
      assert.equal(e.message, `wrong key type: this is ${name}, ${advice}`);
      return true;
    });
  }
});

test("malformed PEM is refused as such (refusesMalformedPEM)", async () => {
  const good = text("keys/openssl-p256.pub.pem");
  const cases = {
    "no BEGIN": "",
    "no BEGIN either": "hello world",
    "truncated: END line gone": good.slice(0, -27),
    "mismatched label": good.replace("END PUBLIC", "END PRIVATE"),
    "bad base64": good.replace("MFkw", "MF!w"),
    "data after END": `${good}garbage\n`,
    "legacy headers": good.replace("-----\n", "-----\nProc-Type: 4,ENCRYPTED\n"),
    "non-canonical base64": good.replace("8w==", "8x=="),
    "empty body": "-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n",
  };
  for (const [why, pem] of Object.entries(cases)) {
    assert.equal(await kindOf(() => parsePublicKey(pem)), "malformed PEM", why);
  }
  // Text before the armor (OpenSSL's "Bag Attributes") and CRLF line ends are read.
  assert.equal((await parsePublicKey(`Bag Attributes\r\n${good.replaceAll("\n", "\r\n")}`)).length, 65);
});

test("a truncated or over-long SPKI is a malformed key", async () => {
  const { der } = parsePEM(text("keys/openssl-p256.pub.pem"));
  const short = armor("PUBLIC KEY", der.subarray(0, der.length - 5));
  assert.equal(await kindOf(() => parsePublicKey(short)), "malformed key");
  const long = new Uint8Array([...der, 0]);
  await assert.rejects(parsePublicKey(armor("PUBLIC KEY", long)), {
    message: "malformed key: SubjectPublicKeyInfo: trailing bytes",
  });
  const unusedBits = der.slice();
  unusedBits[der.length - 66] = 1;
  assert.equal(await kindOf(() => pointOfSPKI(unusedBits)), "malformed key");
});

test("a private key where a public one is needed is refused as such", async () => {
  for (const file of ["openssl-p256.key.pem", "openssl-p256-sec1.key.pem", "openssl-p256-pbkdf2.key.pem"]) {
    const kind = await kindOf(() => parsePublicKey(text(`keys/${file}`)));
    assert.equal(kind, "private key where a public key is needed", file);
  }
  assert.equal(await kindOf(() => parsePublicKey(armor("RSA PUBLIC KEY", Uint8Array.of(1)))), "wrong key type");
  assert.equal(await kindOf(() => parsePublicKey(armor("CERTIFICATE", Uint8Array.of(1)))), "malformed PEM");
});

test("points off the curve are refused in every form (refusesInvalidPoints)", async () => {
  const { point } = await keyPair();
  const off = point.slice();
  off[64] ^= 1;
  assert.equal(await kindOf(() => validPoint(off)), "invalid point");
  assert.equal(await kindOf(() => parsePublicKey(armor("PUBLIC KEY", off, "\r\n"))), "invalid point");
  assert.equal(await kindOf(() => pointOfSPKI(spkiOf(off))), "invalid point");
  assert.equal(await kindOf(() => validPoint(Uint8Array.of(0))), "invalid point");
  assert.equal(await kindOf(() => validPoint(new Uint8Array([4, ...new Array(64).fill(0)]))), "invalid point");
  // A compressed x that is on no curve point, and an x of p or more.
  const noY = new Uint8Array(33);
  noY[0] = 2;
  noY[32] = 1; // x = 1: x³ − 3x + b is not a square mod p
  assert.equal(await kindOf(() => validPoint(noY)), "invalid point");
  assert.equal(await kindOf(() => validPoint(Uint8Array.of(3, ...new Array(32).fill(0xff)))), "invalid point");
});

test("a compressed point is uncompressed to the same key, for either parity", async () => {
  for (let i = 0; i < 8; i++) {
    const { point } = await keyPair();
    const compressed = Uint8Array.of(2 + (point[64] & 1), ...point.subarray(1, 33));
    assert.deepEqual(await validPoint(compressed), point);
  }
  // 1·G, 2·G, 3·G of the safety number vector: their SPKIs come back byte for byte.
  for (const spki of json("safety_number.json").vector.local.signing_keys_spki) {
    assert.deepEqual(spkiOf(await pointOfSPKI(fromHex(spki))), fromHex(spki));
  }
});

// fileLockPEMIsRawPointWithCRLF
test("FileLock's form is the raw point under PUBLIC KEY, CRLF, in lines of 64 and 24 characters", async () => {
  const { point } = await keyPair();
  const pem = publicPEM.filelock(point);
  const lines = pem.split("\r\n");
  assert.equal(lines[0], "-----BEGIN PUBLIC KEY-----");
  assert.equal(lines[1].length, 64);
  assert.equal(lines[2].length, 24);
  assert.equal(lines[3], "-----END PUBLIC KEY-----");
  assert.equal(lines[4], "");
  assert.ok(!pem.replaceAll("\r\n", "").includes("\n"));
  assert.deepEqual(new Uint8Array(Buffer.from(lines[1] + lines[2], "base64")), point);
  assert.deepEqual(await parsePublicKey(pem), point);
});

test("the SPKI form round-trips and the key ID is SHA-256(SPKI)[0..16] (spkiRoundTripAndFingerprint)", async () => {
  const pair = await keyPair();
  const pem = publicPEM.spki(pair.point);
  assert.ok(pem.startsWith("-----BEGIN PUBLIC KEY-----\n"));
  assert.deepEqual(await parsePublicKey(pem), pair.point);
  assert.deepEqual(spkiOf(pair.point), pair.spki, "the same SPKI DER as WebCrypto's");
  const id = await keyIdOf(pair.point);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", pair.spki));
  assert.deepEqual(id, digest.subarray(0, 16));
  const shown = fingerprintText(id);
  assert.deepEqual(shown.split(":").map((g) => g.length), [8, 8, 8, 8]);
  assert.equal(shown.replaceAll(":", ""), hex(id));
});

test("armor wraps at 64 characters and parsePEM reads back label and bytes", () => {
  for (const n of [1, 47, 48, 49, 200]) {
    const der = Uint8Array.from({ length: n }, (_, i) => i);
    const pem = armor("TEST", der);
    for (const line of pem.split("\n").slice(1, -2)) assert.ok(line.length <= 64);
    assert.deepEqual(parsePEM(pem), { label: "TEST", der });
  }
});
