// hpke.js: HPKE base mode, DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-256-GCM (docs/SPEC.md §4.2),
// against RFC 9180's vector for the suite (Vectors/hpke_rfc9180_p256_sha256_aes256gcm.json, which
// HPKEVectorTests.swift reads), round trips, and every refusal of a single-shot open.
import assert from "node:assert/strict";
import test from "node:test";

import { base64url } from "../../Sources/CountersignWebClient/web/js/bytes.js";
import { open, rawPoint, seal } from "../../Sources/CountersignWebClient/web/js/hpke.js";
import { flip, fromHex, json, keyPair, pattern, toHex } from "./support/vectors.mjs";

const v = json("hpke_rfc9180_p256_sha256_aes256gcm.json");
const first = v.encryptions[0];

/** A key pair from the vector's private scalar and public point. */
async function importPair(sk, pk) {
  const point = fromHex(pk);
  const jwk = {
    kty: "EC",
    crv: "P-256",
    d: base64url(fromHex(sk)),
    x: base64url(point.subarray(1, 33)),
    y: base64url(point.subarray(33)),
  };
  return {
    privateKey: await crypto.subtle.importKey("jwk", jwk, { name: "ECDH", namedCurve: "P-256" }, false, ["deriveBits"]),
    publicKey: await crypto.subtle.importKey("raw", point, { name: "ECDH", namedCurve: "P-256" }, true, []),
  };
}

test("the vector is for the suite the formats use (suiteIsTheOneWeUse)", () => {
  assert.deepEqual([v.mode, v.kem_id, v.kdf_id, v.aead_id], [0, 0x10, 1, 2]);
});

// ourSenderReproducesTheVector
test("seal with the vector's ephemeral key gives RFC 9180's enc and ciphertext", async () => {
  const ephemeral = await importPair(v.skEm, v.pkEm);
  const sealed = await seal(fromHex(v.pkRm), fromHex(v.info), fromHex(first.aad), fromHex(first.pt), ephemeral);
  assert.equal(toHex(sealed.enc), v.enc);
  assert.equal(toHex(sealed.ciphertext), first.ct);
  assert.equal(toHex(await rawPoint(ephemeral.publicKey)), v.pkEm);
});

test("open reads RFC 9180's first message and refuses it altered in any way", async () => {
  const r = await importPair(v.skRm, v.pkRm);
  const args = [fromHex(v.pkRm), fromHex(v.enc), fromHex(v.info), fromHex(first.aad), fromHex(first.ct)];
  assert.equal(toHex(await open(r.privateKey, ...args)), first.pt);
  const ct = fromHex(first.ct);
  for (const bit of [0, 7, 100, ct.length * 8 - 1]) {
    await assert.rejects(open(r.privateKey, args[0], args[1], args[2], args[3], flip(ct, bit)), `bit ${bit} of ct`);
  }
  const truncated = ct.subarray(0, ct.length - 1);
  await assert.rejects(open(r.privateKey, args[0], args[1], args[2], args[3], truncated), "truncated");
  await assert.rejects(open(r.privateKey, args[0], args[1], flip(args[2], 0), args[3], ct), "other info");
  await assert.rejects(open(r.privateKey, args[0], args[1], args[2], flip(args[3], 0), ct), "other aad");
  await assert.rejects(open(r.privateKey, args[0], fromHex(v.pkRm), args[2], args[3], ct), "another point as enc");
  const otherPoint = (await keyPair()).point;
  await assert.rejects(open(r.privateKey, otherPoint, args[1], args[2], args[3], ct), "other recipient point");
  await assert.rejects(open((await keyPair()).privateKey, ...args), "another recipient's key");
  // The second message was sealed under the next nonce; a single-shot open does not read it.
  const second = v.encryptions[1];
  await assert.rejects(open(r.privateKey, args[0], args[1], args[2], fromHex(second.aad), fromHex(second.ct)));
});

test("an enc that is not a P-256 point is refused", async () => {
  const r = await importPair(v.skRm, v.pkRm);
  const enc = fromHex(v.enc);
  enc[64] ^= 1;
  const [info, aad, ct] = [fromHex(v.info), fromHex(first.aad), fromHex(first.ct)];
  await assert.rejects(open(r.privateKey, fromHex(v.pkRm), enc, info, aad, ct));
});

test("what seal makes, open reads, at every size around a block and with any info and aad", async () => {
  const recipient = await keyPair();
  for (const n of [0, 1, 15, 16, 17, 32, 1000]) {
    const info = pattern(n % 7, 1);
    const aad = pattern(n % 5, 2);
    const plaintext = pattern(n, n);
    const { enc, ciphertext } = await seal(recipient.point, info, aad, plaintext);
    assert.equal(enc.length, 65);
    assert.equal(ciphertext.length, n + 16);
    assert.deepEqual(await open(recipient.privateKey, recipient.point, enc, info, aad, ciphertext), plaintext);
  }
});

test("every seal draws a fresh ephemeral key", async () => {
  const recipient = await keyPair();
  const a = await seal(recipient.point, new Uint8Array(0), new Uint8Array(0), pattern(10));
  const b = await seal(recipient.point, new Uint8Array(0), new Uint8Array(0), pattern(10));
  assert.notDeepEqual(a.enc, b.enc);
  assert.notDeepEqual(a.ciphertext, b.ciphertext);
});
