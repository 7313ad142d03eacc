// sha256-stream.js: incremental SHA-256 (FIPS 180-4) for a signed sealed file's transcript: the FIPS
// examples, and WebCrypto's answer for every length around the padding boundaries, fed in any pieces.
import assert from "node:assert/strict";
import test from "node:test";

import { utf8 } from "../../Sources/CountersignWebClient/web/js/bytes.js";
import { SHA256 } from "../../Sources/CountersignWebClient/web/js/sha256-stream.js";
import { pattern, toHex } from "./support/vectors.mjs";

const webCrypto = async (bytes) => toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));

test("FIPS 180-4's examples", () => {
  const cases = {
    "": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    abc: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq:
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
  };
  for (const [message, digest] of Object.entries(cases)) {
    assert.equal(toHex(new SHA256().update(utf8(message)).digest()), digest, message);
  }
  const million = new SHA256();
  for (let i = 0; i < 1000; i++) million.update(new Uint8Array(1000).fill(0x61));
  assert.equal(toHex(million.digest()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
});

test("every length from 0 to 200 gives WebCrypto's digest", async () => {
  for (let n = 0; n <= 200; n++) {
    const bytes = pattern(n, n);
    assert.equal(toHex(new SHA256().update(bytes).digest()), await webCrypto(bytes), `length ${n}`);
  }
});

test("the same digest however the input is cut into pieces", async () => {
  const bytes = pattern(1000, 3);
  const want = await webCrypto(bytes);
  for (const cuts of [[1], [55, 1, 8], [63, 1], [64], [65, 63], [119, 1, 1], [7, 13, 200, 3]]) {
    const h = new SHA256();
    let at = 0;
    for (let i = 0; at < bytes.length; i++) {
      const n = cuts[i % cuts.length];
      h.update(bytes.subarray(at, at + n));
      at += n;
    }
    assert.equal(toHex(h.digest()), want, String(cuts));
  }
  assert.equal(toHex(new SHA256().update(new Uint8Array(0)).update(bytes).digest()), want);
});
