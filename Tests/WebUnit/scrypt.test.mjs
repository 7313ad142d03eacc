// scrypt-core.js (RFC 7914 on the calling thread) and scrypt.js (the same in scrypt-worker.js, run here
// in a Node worker thread by support/worker.mjs): RFC 7914 §12's vectors and the refusals before work.
import assert from "node:assert/strict";
import test from "node:test";

import { utf8 } from "../../Sources/CountersignWebClient/web/js/bytes.js";
import { scrypt } from "../../Sources/CountersignWebClient/web/js/scrypt.js";
import { scryptHere } from "../../Sources/CountersignWebClient/web/js/scrypt-core.js";
import { workerURL } from "../../Sources/CountersignWebClient/web/js/trusted.js";
import { toHex } from "./support/vectors.mjs";
import { installWorker, NodeWorker } from "./support/worker.mjs";

installWorker();

// RFC 7914 §12 (the fourth, N = 2^20, takes a gigabyte and is left out).
const RFC7914 = [
  [
    "", "", 16, 1, 1,
    "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede2144" +
      "2fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906",
  ],
  [
    "password", "NaCl", 1024, 8, 16,
    "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162" +
      "2eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640",
  ],
  [
    "pleaseletmein", "SodiumChloride", 16384, 8, 1,
    "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2" +
      "d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887",
  ],
];

test("scryptHere gives RFC 7914's answers", async () => {
  for (const [password, salt, n, r, p, want] of RFC7914) {
    assert.equal(toHex(await scryptHere(utf8(password), utf8(salt), n, r, p, 64)), want, `${password}/${salt}`);
  }
});

test("scryptHere refuses what RFC 7914 does not define or a page cannot hold, before any work", async () => {
  const b = new Uint8Array(1);
  const cases = [
    [["x", b, 16, 1, 1, 32], /password and salt must be bytes/],
    [[b, b, 15, 1, 1, 32], /N must be a power of two/],
    [[b, b, 1, 1, 1, 32], /N must be a power of two/],
    [[b, b, 16, 0, 1, 32], /r and p must be positive/],
    [[b, b, 16, 1, 1.5, 32], /r and p must be positive/],
    [[b, b, 16, 1, 1, 0], /key length/],
    [[b, b, 16, 1, 1, 2 ** 20 + 1], /key length/],
    [[b, b, 2 ** 24, 64, 1, 32], /more memory/],
  ];
  for (const [args, message] of cases) await assert.rejects(scryptHere(...args), message, String(args.slice(2)));
});

test("scrypt runs in the page's worker and gives the same answer; one worker per call", async () => {
  const started = NodeWorker.started;
  const [password, salt, n, r, p, want] = RFC7914[1];
  assert.equal(toHex(await scrypt(utf8(password), utf8(salt), n, r, p, 64)), want);
  assert.equal(NodeWorker.started, started + 1);
});

test("a refusal in the worker comes back as an error with its words", async () => {
  const one = new Uint8Array(1);
  await assert.rejects(scrypt(one, one, 3, 1, 1, 32), /^Error: scrypt: N must be a power of two/);
});

test("worker URLs pass as they are where the page has no Trusted Types", () => {
  assert.equal(workerURL("/js/scrypt-worker.js"), "/js/scrypt-worker.js");
});
