// qr.js: the QR Code encoder (ISO/IEC 18004:2015). Symbols are read back by zbarimg (a decoder apart
// from ours, which scripts/test.sh installs; the test is skipped without it), and checked against the
// standard's own numbers: the smallest version that holds the text, the function patterns, and the
// format information of Table C.1. qrCode() draws with `document` and is tested in the browser
// (Tests/Web/tests_two_factor.py); only its refusal before drawing is tested here.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "node:test";

import { encode, qrCode } from "../../Sources/CountersignWebClient/web/js/qr.js";

const hasZbar = (() => {
  try {
    execFileSync("zbarimg", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

/** The symbol as a PGM image: 4 pixels a module, the 4-module quiet zone, dark on light. */
function pgm(symbol) {
  const scale = 4;
  const side = (symbol.size + 8) * scale;
  const pixels = Buffer.alloc(side * side, 255);
  for (let y = 0; y < symbol.size; y++) {
    for (let x = 0; x < symbol.size; x++) {
      if (!symbol.dark(x, y)) continue;
      for (let dy = 0; dy < scale; dy++) {
        const row = ((y + 4) * scale + dy) * side;
        pixels.fill(0, row + (x + 4) * scale, row + (x + 5) * scale);
      }
    }
  }
  return Buffer.concat([Buffer.from(`P5 ${side} ${side} 255\n`), pixels]);
}

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789/:?&=._-";
const filler = Array.from({ length: 2331 }, (_, i) => ALPHABET[(i * 37) % 44]).join("");

const needsZbar = { skip: !hasZbar && "no zbarimg" };
test("zbarimg reads back every text: 1 byte to version 40, each level, each forced mask, UTF-8", needsZbar, () => {
  const otpauth = "otpauth://totp/Countersign:ada?secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&issuer=Countersign&digits=6";
  const cases = [
    ["A", {}],
    [Array.from({ length: 60 }, (_, i) => String((i * 7) % 10)).join(""), {}],
    [otpauth, {}],
    [filler.slice(0, 400), {}],
    [filler.slice(0, 1700), {}],
    [filler, {}],
    ["Grüße aus Zürich — 安全 ✓", {}],
    [otpauth, { level: "L" }],
    [otpauth, { level: "Q" }],
    [otpauth, { level: "H" }],
    ...Array.from({ length: 8 }, (_, m) => [`countersign://pair?key=ABCDEFGHJKMN&mask=${m}`, { mask: m }]),
  ];
  const dir = mkdtempSync(join(tmpdir(), "qr-"));
  try {
    const files = cases.map(([text, options], i) => {
      const file = join(dir, `${String(i).padStart(2, "0")}.pgm`);
      writeFileSync(file, pgm(encode(text, options)));
      return file;
    });
    // One zbarimg for all: each symbol's text on a line of its own, in the order of the files.
    const options = { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] };
    const out = execFileSync("zbarimg", ["-q", "--raw", ...files], options);
    assert.deepEqual(out.split("\n").slice(0, -1), cases.map(([text]) => text));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the smallest version that holds the text; one byte past version 40 is refused", () => {
  // Byte-mode capacities at level M (ISO/IEC 18004 Table 7): 14 bytes in version 1, 26 in 2, 2331 in 40.
  assert.equal(encode("a".repeat(14)).version, 1);
  assert.equal(encode("a".repeat(15)).version, 2);
  assert.equal(encode("a".repeat(26)).version, 2);
  assert.equal(encode("a".repeat(27)).version, 3);
  assert.equal(encode(filler).version, 40);
  assert.equal(encode("a".repeat(17), { level: "L" }).version, 1);
  assert.equal(encode("a".repeat(18), { level: "L" }).version, 2);
  assert.throws(() => encode(`${filler}a`), RangeError);
  assert.throws(() => encode("x", { level: "X" }), RangeError);
  const symbol = encode("é".repeat(7)); // 14 bytes of UTF-8: still version 1
  assert.equal(symbol.version, 1);
  assert.equal(symbol.size, 21);
  assert.equal(encode(filler).size, 177);
});

test("finder, timing and dark module are where the standard puts them", () => {
  for (const text of ["A", filler.slice(0, 300)]) {
    const s = encode(text);
    const n = s.size;
    for (const [ox, oy] of [[0, 0], [n - 7, 0], [0, n - 7]]) {
      for (let y = 0; y < 7; y++) {
        for (let x = 0; x < 7; x++) {
          const ring = Math.max(Math.abs(x - 3), Math.abs(y - 3));
          assert.equal(s.dark(ox + x, oy + y), ring !== 2, `finder at ${ox},${oy}: ${x},${y}`);
        }
      }
    }
    for (let i = 8; i < n - 8; i++) {
      assert.equal(s.dark(i, 6), i % 2 === 0, `timing row at ${i}`);
      assert.equal(s.dark(6, i), i % 2 === 0, `timing column at ${i}`);
    }
    assert.equal(s.dark(8, n - 8), true, "the dark module");
  }
});

/** The 15 format bits, from both copies (ISO/IEC 18004 §7.9.1). */
function formatOf(s) {
  const n = s.size;
  const first = [];
  const second = [];
  for (let i = 0; i <= 5; i++) first[i] = s.dark(8, i);
  [first[6], first[7], first[8]] = [s.dark(8, 7), s.dark(8, 8), s.dark(7, 8)];
  for (let i = 9; i < 15; i++) first[i] = s.dark(14 - i, 8);
  for (let i = 0; i < 8; i++) second[i] = s.dark(n - 1 - i, 8);
  for (let i = 8; i < 15; i++) second[i] = s.dark(8, n - 15 + i);
  const value = (bits) => bits.reduce((v, b, i) => v | (b ? 1 << i : 0), 0);
  assert.equal(value(first), value(second), "both copies agree");
  return value(first).toString(2).padStart(15, "0");
}

test("the format information is Table C.1's for each level and mask", () => {
  // ISO/IEC 18004:2015 Table C.1, mask 0 of each level, and all masks of M.
  const table = { L: "111011111000100", M: "101010000010010", Q: "011010101011111", H: "001011010001001" };
  for (const [level, bits] of Object.entries(table)) {
    const s = encode("countersign", { level, mask: 0 });
    assert.equal(s.mask, 0);
    assert.equal(formatOf(s), bits, level);
  }
  const m = ["101010000010010", "101000100100101", "101111001111100", "101101101001011",
    "100010111111001", "100000011001110", "100111110010111", "100101010100000"];
  for (let mask = 0; mask < 8; mask++) {
    assert.equal(formatOf(encode("countersign", { mask })), m[mask], `M mask ${mask}`);
  }
  // Without a forced mask, one of the eight is chosen and the symbol says which.
  const chosen = encode("otpauth://totp/x");
  assert.equal(formatOf(chosen), m[chosen.mask]);
});

test("qrCode refuses a code without words for what it encodes, before drawing", () => {
  assert.throws(() => qrCode("x"), TypeError);
  assert.throws(() => qrCode("x", { label: "" }), TypeError);
});
