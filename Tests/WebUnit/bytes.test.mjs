// bytes.js: concatenation, lv(), base64url, hex, key IDs as shown, SHA-256 (docs/SPEC.md §1).
import assert from "node:assert/strict";
import test from "node:test";

import {
  base64url,
  concat,
  fromBase64url,
  groupedKeyId,
  hex,
  lv,
  sha256,
  utf8,
} from "../../Sources/CountersignWebClient/web/js/bytes.js";
import { fromHex, json, pattern } from "./support/vectors.mjs";

test("concat joins in order, and of nothing is empty", () => {
  assert.deepEqual(concat(), new Uint8Array(0));
  assert.deepEqual(concat(Uint8Array.of(1), new Uint8Array(0), Uint8Array.of(2, 3)), Uint8Array.of(1, 2, 3));
});

test("lv is a big-endian u16 length then the bytes, up to 65535 bytes", () => {
  assert.deepEqual(lv(new Uint8Array(0)), Uint8Array.of(0, 0));
  assert.deepEqual(lv(utf8("abc")), Uint8Array.of(0, 3, 0x61, 0x62, 0x63));
  const longest = lv(new Uint8Array(0xffff));
  assert.deepEqual(longest.subarray(0, 2), Uint8Array.of(0xff, 0xff));
  assert.equal(longest.length, 0x10001);
  assert.deepEqual(lv(new Uint8Array(0x1234)).subarray(0, 2), Uint8Array.of(0x12, 0x34));
  assert.throws(() => lv(new Uint8Array(0x10000)), RangeError);
});

test("lv of each SPKI gives the safety number vector's key bytes (Vectors/safety_number.json)", () => {
  const { remote } = json("safety_number.json").vector;
  assert.equal(hex(lv(fromHex(remote.signing_keys_spki[0]))), remote.key_bytes);
});

test("base64url is unpadded, URL-safe, and reads back what it wrote at every length", () => {
  const rfc4648 = { "": "", f: "Zg", fo: "Zm8", foo: "Zm9v", foob: "Zm9vYg", fooba: "Zm9vYmE", foobar: "Zm9vYmFy" };
  for (const [plain, encoded] of Object.entries(rfc4648)) {
    assert.equal(base64url(utf8(plain)), encoded);
    assert.deepEqual(fromBase64url(encoded), utf8(plain));
  }
  assert.equal(base64url(Uint8Array.of(0xfb, 0xff, 0xbf)), "-_-_");
  for (let n = 0; n < 70; n++) {
    const bytes = pattern(n, n);
    const text = base64url(bytes);
    assert.equal(text, Buffer.from(bytes).toString("base64url"), `length ${n}`);
    assert.deepEqual(fromBase64url(text), bytes, `length ${n}`);
  }
});

test("fromBase64url refuses padding, the standard alphabet and stray characters", () => {
  for (const bad of ["AA==", "AA=", "+A", "/A", "AA A", "AÀ", "A", "AAAAA", "AA\n"]) {
    assert.throws(() => fromBase64url(bad), `${JSON.stringify(bad)}`);
  }
  assert.deepEqual(fromBase64url("AA"), Uint8Array.of(0));
  assert.deepEqual(fromBase64url("AAE"), Uint8Array.of(0, 1));
  assert.deepEqual(fromBase64url(""), new Uint8Array(0));
});

// Swift's Base64URL(text:) (APITypesTests.base64URLIsCanonicalAndAgreesWithFoundation) refuses "AB" and
// "AAB": their spare bits are not zero. The browser's atob() drops spare bits, so fromBase64url checks them.
test("fromBase64url refuses non-zero spare bits, as Swift's Base64URL does", () => {
  for (const bad of ["AB", "AAB"]) assert.throws(() => fromBase64url(bad), JSON.stringify(bad));
});

test("hex is lower-case, two digits a byte", () => {
  assert.equal(hex(new Uint8Array(0)), "");
  assert.equal(hex(Uint8Array.of(0, 1, 0x0f, 0xa0, 0xff)), "00010fa0ff");
});

test("a key ID is shown as four groups of 8, breakable only between groups", () => {
  const id = "0123456789abcdef0123456789abcdef";
  assert.equal(groupedKeyId(id), "01234567:\u200b89abcdef:\u200b01234567:\u200b89abcdef");
  assert.equal(groupedKeyId(id).replaceAll("\u200b", "").split(":").length, 4);
});

test("sha256 gives FIPS 180-4's answers", async () => {
  assert.equal(hex(await sha256(utf8(""))), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  assert.equal(hex(await sha256(utf8("abc"))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
});

test("utf8 encodes text as UTF-8", () => {
  assert.deepEqual(utf8("é€😀"), Uint8Array.of(0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80));
});
