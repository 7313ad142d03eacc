// captcha-worker.js finds the number ALTCHA hid (SHA-256(salt || n) = challenge), through its one-block path
// (every salt the server makes) and through the stream for a salt too long for one block; it says when
// there is none. Checked against node's own SHA-256.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import test from "node:test";

const posted = [];
globalThis.self = { postMessage: (message) => posted.push(message) };
await import("../../Sources/CountersignWebClient/web/js/captcha-worker.js");
const solve = (data) => {
  posted.length = 0;
  globalThis.self.onmessage({ data });
  return posted.at(-1);
};
const challenge = (salt, n) => createHash("sha256").update(`${salt}${n}`).digest("hex");

test("the worker finds the number, in one block and past it, and says when there is none", () => {
  const short = "3f9a0c1d2e4b5a6978c0d1e2?expires=1800000600&";
  const long = `${"a".repeat(60)}?expires=1800000600&`;
  for (const salt of [short, long, ""]) {
    for (const n of [0, 7, 4321, 99_999]) {
      assert.deepEqual(
        solve({ salt, challenge: challenge(salt, n), start: 0, stride: 1, max: 100_000 }),
        { found: n, tried: n + 1 },
        `${salt.length}-byte salt, ${n}`,
      );
    }
  }
  // Two workers share the range by stride: each finds only its own numbers.
  assert.equal(solve({ salt: short, challenge: challenge(short, 4321), start: 1, stride: 2, max: 100_000 }).found, 4321);
  assert.equal(solve({ salt: short, challenge: challenge(short, 4321), start: 0, stride: 2, max: 100_000 }).found, null);
  assert.deepEqual(solve({ salt: short, challenge: challenge(short, 200), start: 0, stride: 1, max: 100 }), {
    found: null,
    tried: 101,
  });
  assert.equal(solve({ salt: short, challenge: "not hex", start: 0, stride: 1, max: 10 }).found, null);
});
