// The web client's pure modules under Node's test runner: `node --test Tests/WebUnit/*.test.mjs`.
// display-name.js: what the page shows of a name someone else chose.
import assert from "node:assert/strict";
import test from "node:test";

import { hasHiddenCharacters, visibleText } from "../../Sources/CountersignWebClient/web/js/display-name.js";

test("a right-to-left override is shown, not obeyed", () => {
  assert.equal(visibleText("\u202Eevil"), "<U+202E>evil");
  assert.equal(visibleText("invoice\u202Egnp.exe"), "invoice<U+202E>gnp.exe");
  assert.equal(hasHiddenCharacters("\u202Eevil"), true);
});

test("every bidirectional control is escaped", () => {
  const controls = [0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069];
  for (const c of controls) {
    const shown = visibleText(`a${String.fromCodePoint(c)}b`);
    assert.equal(shown, `a<U+${c.toString(16).toUpperCase().padStart(4, "0")}>b`);
    assert.doesNotMatch(shown, /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/);
  }
});

test("invisible characters are escaped: two names that look alike do not read alike", () => {
  const cases = {
    "b\u200Bob": "b<U+200B>ob", // zero-width space
    "b\u200Dob": "b<U+200D>ob", // zero-width joiner between letters
    "bo\u00ADb": "bo<U+00AD>b", // soft hyphen
    "\uFEFFbob": "<U+FEFF>bob", // byte order mark
    "bob\u2060": "bob<U+2060>", // word joiner
    "b\u034Fob": "b<U+034F>ob", // combining grapheme joiner
    "\u3164": "<U+3164>", // Hangul filler: shows as a blank
    "bob\uFE0F": "bob<U+FE0F>", // a variation selector on a letter
    "a\u0000b\u0007c\u007F": "a<U+0000>b<U+0007>c<U+007F>", // controls
    "line\u2028two\u2029": "line<U+2028>two<U+2029>", // separators
    "tag\u{E0041}": "tag<U+E0041>", // a tag character, outside the BMP
  };
  for (const [name, shown] of Object.entries(cases)) assert.equal(visibleText(name), shown, JSON.stringify(name));
});

test("ordinary names, right-to-left scripts and emoji are left as they are", () => {
  for (const name of ["ada", "Ada's laptop", "Chrome on Linux x86_64", "Zoë", "שלום", "مرحبا", "東京", "phone 📱", "❤️ heart", "👨‍👩‍👧 family", "👍🏽 ok", "<U+202E>"]) {
    assert.equal(visibleText(name), name);
    assert.equal(hasHiddenCharacters(name), false);
  }
});

test("not a string: shown as its text", () => {
  assert.equal(visibleText(undefined), "");
  assert.equal(visibleText(null), "");
  assert.equal(visibleText(42), "42");
});

test("spaces other than the plain one are escaped: 'bob\\u2003' does not pass for 'bob '", () => {
  assert.equal(visibleText("bob\u2003"), "bob<U+2003>");
  assert.equal(visibleText("a\u00A0b"), "a<U+00A0>b");
  assert.equal(visibleText("東京\u3000PC"), "東京<U+3000>PC");
  assert.equal(visibleText("plain space"), "plain space");
});

test("a stack of combining marks is cut to three per letter; accents stay", () => {
  assert.equal(visibleText("Zoë"), "Zoë");
  assert.equal(visibleText("Ze\u0301\u0302"), "Ze\u0301\u0302");
  assert.equal(visibleText("a\u0301\u0302\u0303\u0304\u0305b"), "a\u0301\u0302\u0303<U+0304><U+0305>b");
  assert.equal(visibleText("नमस्ते"), "नमस्ते"); // Devanagari signs are marks too, one or two per letter
});
