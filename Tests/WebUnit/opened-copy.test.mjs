// opened-copy.js: what opening a message found, kept under a key only this device's encryption key pair can
// derive. A copy opens with the pair it was made for (any handle to the same private key: the key comes from
// the key material, not from one CryptoKey object); a copy for another pair is not used (null); an altered
// copy, or one moved to another message, account or envelope, is refused; a stored public key that is not the
// private key's derives nothing; the text is never stored in clear.
import assert from "node:assert/strict";
import test from "node:test";

import { base64url, fromBase64url } from "../../Sources/CountersignWebClient/web/js/bytes.js";
import { rawPoint } from "../../Sources/CountersignWebClient/web/js/hpke.js";
import { makeCopy, readCopy } from "../../Sources/CountersignWebClient/web/js/opened-copy.js";

const content = { text: "kept for the next showing ✓\nsecond line", signerKeyId: "8c4e0aa61d9aee16", verifiedAt: 1 };
const at = {
  accountId: "acct-1",
  messageId: "4b450525fe0857227c68cd5cd430b158",
  envelopeHash: new Uint8Array(32).fill(0xab),
};

/** An ECDH pair as messages.js keeps it (privateKey and its public point), and a second handle to the same
 *  private key (imported again from its PKCS #8), as after a reload. */
async function pairs() {
  const generated = await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"]);
  const point = await rawPoint(generated.publicKey);
  const pkcs8 = await crypto.subtle.exportKey("pkcs8", generated.privateKey);
  const again = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "ECDH", namedCurve: "P-256" }, false, [
    "deriveBits",
  ]);
  return [{ privateKey: generated.privateKey, point }, { privateKey: again, point }];
}

test("a copy opens with the same key pair, through another handle to it too", async () => {
  const [pair, sameAgain] = await pairs();
  const copy = await makeCopy({ ...at, content, pair, keyId: "k1" });
  assert.deepEqual(await readCopy(copy, { ...at, pair, keyId: "k1" }), content);
  assert.deepEqual(await readCopy(copy, { ...at, pair: sameAgain, keyId: "k1" }), content, "derived from the key");
  assert.equal(JSON.stringify(copy).includes("kept for the next"), false, "only ciphertext is kept");
  const twice = await makeCopy({ ...at, content, pair, keyId: "k1" });
  assert.notEqual(twice.iv, copy.iv, "a fresh IV each time");
});

test("the IV comes from the randomness given", async () => {
  const [pair] = await pairs();
  const copy = await makeCopy({ ...at, content, pair, keyId: "k1", random: (n) => new Uint8Array(n).fill(9) });
  assert.deepEqual(fromBase64url(copy.iv), new Uint8Array(12).fill(9));
});

test("a copy for another key pair, or of another form, is not used", async () => {
  const [pair] = await pairs();
  const [other] = await pairs();
  const copy = await makeCopy({ ...at, content, pair, keyId: "k1" });
  assert.equal(await readCopy(copy, { ...at, pair: other, keyId: "k2" }), null, "another key ID");
  assert.equal(await readCopy({ ...copy, v: 2 }, { ...at, pair, keyId: "k1" }), null, "another version");
  assert.equal(await readCopy(undefined, { ...at, pair, keyId: "k1" }), null);
  // Labelled with this pair's key ID but made under another pair's key: it does not open.
  await assert.rejects(readCopy(copy, { ...at, pair: other, keyId: "k1" }), /altered or belongs to another/);
});

test("an altered copy, or one moved to another message or account, is refused", async () => {
  const [pair] = await pairs();
  const copy = await makeCopy({ ...at, content, pair, keyId: "k1" });
  const ct = fromBase64url(copy.ct);
  ct[3] ^= 1;
  const refused = /altered or belongs to another message/;
  await assert.rejects(readCopy({ ...copy, ct: base64url(ct) }, { ...at, pair, keyId: "k1" }), refused);
  await assert.rejects(readCopy({ ...copy, ct: copy.ct.slice(0, -4) }, { ...at, pair, keyId: "k1" }), refused);
  await assert.rejects(readCopy(copy, { ...at, messageId: "00".repeat(16), pair, keyId: "k1" }), refused);
  await assert.rejects(readCopy(copy, { ...at, accountId: "acct-2", pair, keyId: "k1" }), refused);
  const otherEnvelope = new Uint8Array(32).fill(0xac);
  await assert.rejects(readCopy(copy, { ...at, envelopeHash: otherEnvelope, pair, keyId: "k1" }), refused);
});

test("a stored public key that is not the private key's derives no key", async () => {
  const [pair] = await pairs();
  const [other] = await pairs();
  // G itself: the "own" ECDH would then be x(d·G), the public key, which anyone can compute.
  const g = Uint8Array.from(
    ("046b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296" +
      "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5").match(/../g),
    (b) => parseInt(b, 16),
  );
  for (const point of [g, other.point]) {
    await assert.rejects(
      makeCopy({ ...at, content, pair: { privateKey: pair.privateKey, point }, keyId: "k1" }),
      /does not belong to its private key/,
    );
  }
  // The same private key with its own public key still works: a refusal is not remembered for the key.
  const copy = await makeCopy({ ...at, content, pair, keyId: "k1" });
  assert.deepEqual(await readCopy(copy, { ...at, pair, keyId: "k1" }), content);
});
