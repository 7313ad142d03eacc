// filelock.js: FileLock's package (docs/SPEC.md §3): every filelock_*.txt vector the Swift tests run
// (VectorTests.swift) opened to the same class, FileLockTests.swift's layout, size limit and truncations,
// and round trips.
import assert from "node:assert/strict";
import test from "node:test";

import { concat } from "../../Sources/CountersignWebClient/web/js/bytes.js";
import { MAX_PLAINTEXT, open, seal } from "../../Sources/CountersignWebClient/web/js/filelock.js";
import { keyIdOf } from "../../Sources/CountersignWebClient/web/js/pem.js";
import { detect } from "../../Sources/CountersignWebClient/web/js/sealed-file.js";
import { expected, identityOf, keyPair, outcome, pattern, readVector, vectorNames } from "./support/vectors.mjs";

const u32 = (n) => Uint8Array.of(n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);

async function identity() {
  const pair = await keyPair();
  return { agreement: pair.privateKey, point: pair.point, keyId: await keyIdOf(pair.point) };
}

const kindOf = async (bytes, who) => {
  try {
    await open(bytes, who);
    return "opened";
  } catch (error) {
    return error.kind ?? `${error.name}: ${error.message}`;
  }
};

test("every FileLock vector opens to the class the Swift tests expect", async () => {
  const names = vectorNames("filelock_");
  assert.ok(names.length >= 12, `${names.length} FileLock vectors`);
  const wrong = {};
  for (const name of names) {
    const v = readVector(name);
    const got = await outcome(async () => open(v.bytes, await identityOf(v)));
    if (got !== expected(v)) wrong[v.name] = { comment: v.comment, got, want: expected(v) };
    if (v.expect === "success") assert.equal(detect(v.bytes), "filelock", name);
  }
  assert.deepEqual(wrong, {});
});

test("a package is four big-endian length-prefixed chunks (layoutIsFourBigEndianLengthPrefixedChunks)", async () => {
  const bob = await identity();
  const plaintext = pattern(1000);
  const fileKey = pattern(32, 7);
  const nonce = pattern(12, 9);
  const pkg = await seal(plaintext, bob.point, { fileKey, nonce });
  assert.equal(pkg.length, plaintext.length + 157);
  assert.deepEqual(pkg.subarray(0, 4), u32(113));
  assert.equal(pkg[4], 0x04, "the wrapped key starts with the ephemeral point");
  assert.deepEqual(pkg.subarray(117, 121), u32(12));
  assert.deepEqual(pkg.subarray(121, 133), nonce);
  assert.deepEqual(pkg.subarray(133, 137), Uint8Array.of(0, 0, 0x03, 0xe8));
  assert.deepEqual(pkg.subarray(1137, 1141), u32(16));
  assert.deepEqual(await open(pkg, bob), plaintext);
  // The payload is plain AES-256-GCM with no AAD under the file key.
  const key = await crypto.subtle.importKey("raw", fileKey, "AES-GCM", false, ["decrypt"]);
  const body = concat(pkg.subarray(137, 1137), pkg.subarray(1141));
  assert.deepEqual(new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv: nonce }, key, body)), plaintext);
});

test("what seal makes opens for its recipient only, at any size", async () => {
  const bob = await identity();
  const carol = await identity();
  for (const n of [0, 1, 16, 65_537]) {
    const pkg = await seal(pattern(n, n), bob.point);
    assert.deepEqual(await open(pkg, bob), pattern(n, n));
    assert.equal(await kindOf(pkg, carol), "not for this key");
  }
});

// refusesAboveTheSizeLimitWithoutCrashing
test("above the size limit is too large, refused before it is read", async () => {
  assert.equal(MAX_PLAINTEXT, 256 * 1024 * 1024);
  const bob = await identity();
  // A ciphertext length of MAX_PLAINTEXT + 1 declared in the header: nothing that large is needed.
  const pkg = await seal(pattern(10), bob.point);
  const header = concat(pkg.subarray(0, 133), u32(MAX_PLAINTEXT + 1), pattern(10));
  assert.equal(await kindOf(header, bob), "too large");
});

test("every truncation is malformed (everyTruncationIsMalformed)", async () => {
  const bob = await identity();
  const pkg = await seal(pattern(40), bob.point);
  for (let n = 0; n < pkg.length; n++) assert.equal(await kindOf(pkg.subarray(0, n), bob), "malformed", `prefix ${n}`);
  assert.equal(await kindOf(concat(pkg, Uint8Array.of(0)), bob), "malformed");
});

test("every byte flipped is refused by its class", async () => {
  const bob = await identity();
  const pkg = await seal(pattern(20), bob.point);
  const classOf = (i) => {
    const length = i < 4 || (i >= 117 && i < 121) || (i >= 133 && i < 137) || (i >= 157 && i < 161);
    if (length) return ["malformed", "too large"];
    if (i < 4 + 65) return ["header", "not for this key"]; // the ephemeral point: off the curve, or another point
    if (i < 117) return ["not for this key"]; // the wrapped file key
    return ["tampered"]; // nonce, ciphertext, tag
  };
  const wrong = [];
  for (let i = 0; i < pkg.length; i++) {
    const bad = pkg.slice();
    bad[i] ^= 0x01;
    const kind = await kindOf(bad, bob);
    if (!classOf(i).includes(kind)) wrong.push(`byte ${i}: ${kind}`);
  }
  assert.deepEqual(wrong, []);
});
