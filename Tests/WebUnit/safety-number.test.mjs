// safety-number.js: the safety number (docs/SPEC.md §9) against Vectors/safety_number.json, the file
// SafetyNumberTests.swift reads: our worked vector and libsignal's DISPLAYABLE_FINGERPRINT_V1; then the
// properties SafetyNumberTests checks (both sides agree, order and duplicates do not matter, every key
// change and the username change the number, an account without keys has none).
import assert from "node:assert/strict";
import test from "node:test";

import { concat, utf8 } from "../../Sources/CountersignWebClient/web/js/bytes.js";
import { identityFromPKCS8 } from "../../Sources/CountersignWebClient/web/js/file-keys.js";
import { spkiOf } from "../../Sources/CountersignWebClient/web/js/pem.js";
import { digits, display, keyBytes, safetyNumber } from "../../Sources/CountersignWebClient/web/js/safety-number.js";
import { fromHex, json, keyPair, toHex } from "./support/vectors.mjs";

const file = json("safety_number.json");
const { vector, libsignal } = file;

/** The SPKI of d·G: a PKCS#8 of the scalar alone, whose public point WebCrypto computes. */
async function spkiOfScalar(d) {
  const scalar = new Uint8Array(32);
  scalar[31] = d;
  const ecPrivateKey = concat(Uint8Array.of(0x30, 0x25, 0x02, 0x01, 0x01, 0x04, 0x20), scalar);
  const algorithm = fromHex("301306072a8648ce3d020106082a8648ce3d030107");
  const version = Uint8Array.of(0x02, 0x01, 0x00);
  const body = concat(version, algorithm, Uint8Array.of(0x04, ecPrivateKey.length), ecPrivateKey);
  const pkcs8 = concat(Uint8Array.of(0x30, body.length), body);
  return spkiOf((await identityFromPKCS8(pkcs8)).point);
}

const account = (side) => ({ username: side.username, signingKeys: side.signing_keys_spki.map(fromHex) });

test("the vector's keys are those of its private scalars, in the order given", async () => {
  for (const side of [vector.local, vector.remote]) {
    const derived = await Promise.all(side.private_scalars.map(spkiOfScalar));
    assert.deepEqual(derived.map(toHex), side.signing_keys_spki);
  }
});

test("the worked vector reproduces: key bytes and display (vectorFileReproduces)", () => {
  assert.equal(file.iterations, 5200);
  for (const side of [vector.local, vector.remote]) {
    assert.equal(toHex(keyBytes(side.signing_keys_spki.map(fromHex))), side.key_bytes, side.username);
  }
  // Each side's digits and the number, from safetyNumber() either way round: sameOnBothSides below.
  assert.equal(display(vector.safety_number), vector.display);
});

test("the hash and digits are Signal's: libsignal's own vector (hashAndDigitsAreSignals)", async () => {
  const half = (side) => digits(fromHex(side.key_bytes), utf8(side.identifier));
  const [a, b] = await Promise.all([half(libsignal.local), half(libsignal.remote)]);
  assert.equal(a < b ? a + b : b + a, libsignal.safety_number);
});

async function keys(n) {
  return Promise.all(Array.from({ length: n }, async () => (await keyPair("ECDSA")).spki));
}

// A number is 5,200 rounds of SHA-512 a side: the properties below are checked on the vector's accounts
// (whose halves are known) and on the key bytes each side hashes, with as few whole hashes as show them.
test("both sides compute the same number, the smaller half first (sameOnBothSides)", async () => {
  const [ab, ba] = await Promise.all([
    safetyNumber(account(vector.local), account(vector.remote)),
    safetyNumber(account(vector.remote), account(vector.local)),
  ]);
  assert.equal(ab, vector.safety_number);
  assert.equal(ba, ab);
  const number = ab;
  assert.equal(number, [vector.local.digits, vector.remote.digits].sort().join(""));
  assert.match(number, /^\d{60}$/);
  assert.deepEqual(display(number).split(" ").map((g) => g.length), new Array(12).fill(5));
});

test("display groups by five (displayGroupsByFive)", () => {
  assert.equal(display("12345"), "12345");
  assert.equal(display("0123456789".repeat(6)), "01234 56789 ".repeat(6).trim());
});

// orderOfAnAccountsKeysDoesNotMatter
test("the order of an account's keys and a key listed twice do not matter", async () => {
  const a = await keys(4);
  for (const order of [[...a].reverse(), [a[2], a[0], a[3], a[1]], [...a, a[0], a[3]]]) {
    assert.deepEqual(keyBytes(order), keyBytes(a));
  }
  const local = vector.local.signing_keys_spki.map(fromHex);
  const reordered = { username: vector.local.username, signingKeys: [local[1], local[0], local[1]] };
  assert.equal(await safetyNumber(reordered, account(vector.remote)), vector.safety_number);
});

test("every key change changes the number, and only its own half (everyKeyChangeChangesTheNumber)", async () => {
  const [a, b, extra] = [await keys(3), await keys(2), await keys(2)];
  const sides = (x, y) => toHex(keyBytes(x)) + "/" + toHex(keyBytes(y));
  const base = sides(a, b);
  const variants = {
    "alice adds a device": sides([...a, extra[0]], b),
    "bob adds a device": sides(a, [...b, extra[0]]),
    "alice removes a device": sides(a.slice(0, -1), b),
    "bob removes a device": sides(a, b.slice(1)),
    "alice rotates a key": sides([a[0], extra[1], a[2]], b),
    "bob rotates a key": sides(a, [b[0], extra[1]]),
    "a device moves from bob to alice": sides([...a, b[1]], [b[0]]),
  };
  for (const [what, n] of Object.entries(variants)) assert.notEqual(n, base, what);
  assert.equal(new Set(Object.values(variants)).size, Object.keys(variants).length);
  // The vector's local account adds a device: its half changes, the remote half stays.
  const local = vector.local.signing_keys_spki.map(fromHex);
  const grown = { username: vector.local.username, signingKeys: [...local, extra[0]] };
  const number = await safetyNumber(grown, account(vector.remote));
  assert.notEqual(number, vector.safety_number);
  assert.ok(number.includes(vector.remote.digits) && !number.includes(vector.local.digits));
});

test("the username is part of the number (usernameIsPartOfTheNumber)", async () => {
  const local = vector.local.signing_keys_spki.map(fromHex);
  assert.notEqual(await digits(keyBytes(local), utf8("Alice")), vector.local.digits, "case counts");
});

test("an account without keys has no safety number (anAccountWithoutKeysIsRefused)", async () => {
  const some = await keys(1);
  await assert.rejects(safetyNumber({ username: "alice", signingKeys: some }, { username: "bob", signingKeys: [] }), {
    message: "bob has no active device key, so there is no safety number to compare.",
  });
  const keyless = { username: "alice", signingKeys: [] };
  await assert.rejects(safetyNumber(keyless, { username: "bob", signingKeys: some }), /alice/);
});
