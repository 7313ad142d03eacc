// messages.js, its pure part: how long a text is against the 1 MiB a message holds, and the words for
// it. (Sending, storing and opening go through IndexedDB and the server: the browser tests cover them.)
import assert from "node:assert/strict";
import test from "node:test";

import { MAX_PLAINTEXT } from "../../Sources/CountersignWebClient/web/js/envelope.js";
import { sizeWords, textSize, tooLongWords } from "../../Sources/CountersignWebClient/web/js/messages.js";

test("a text surely under 90 % of the limit is not even counted", () => {
  assert.equal(textSize(""), null);
  assert.equal(textSize("a".repeat(300_000)), null); // 3 bytes a unit at most: under 943,718 bytes
});

test("a text near or over the limit is counted in UTF-8 bytes", () => {
  const near = Math.ceil(0.9 * MAX_PLAINTEXT);
  assert.equal(textSize("a".repeat(near - 1)), null);
  assert.equal(textSize("a".repeat(near)), near);
  assert.equal(textSize("a".repeat(MAX_PLAINTEXT + 1)), MAX_PLAINTEXT + 1);
  assert.equal(textSize("é".repeat(500_000)), 1_000_000, "two bytes a letter");
  assert.equal(textSize("€".repeat(400_000)), 1_200_000, "three bytes a letter");
  assert.equal(textSize("😀".repeat(250_000)), 1_000_000, "four bytes, two UTF-16 units");
  assert.equal(textSize("a".repeat(100), 0), 100, "share 0 counts everything");
});

test("the counter's words, under and over the limit, in KiB", () => {
  assert.equal(sizeWords(1_000_000), "977 KiB of the 1,024 KiB (1 MiB) a message can hold.");
  assert.equal(
    sizeWords(MAX_PLAINTEXT + 1),
    "Too long: 1,025 KiB of the 1,024 KiB a message can hold. Shorten it, or send it as a file under Files.",
  );
  const words = tooLongWords(2_000_000);
  assert.match(words, /^The text is 1,954 KiB, over the 1,024 KiB \(1 MiB\) a message can hold\./);
  assert.match(words, /Nothing was sent\.$/);
});
