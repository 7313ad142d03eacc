// open-order.js: the order a conversation opens its messages in: newest first, in chunks, a message
// brought into view meanwhile next.
import assert from "node:assert/strict";
import test from "node:test";

import { openingOrder } from "../../Sources/CountersignWebClient/web/js/open-order.js";

const ids = ["m1", "m2", "m3", "m4", "m5", "m6", "m7"]; // oldest first, as the thread shows them

test("newest first, in chunks of the size asked, until none is left", () => {
  const order = openingOrder(ids);
  assert.equal(order.size, 7);
  assert.deepEqual(order.next(3), ["m7", "m6", "m5"]);
  assert.equal(order.size, 4);
  assert.deepEqual(order.next(3), ["m4", "m3", "m2"]);
  assert.deepEqual(order.next(3), ["m1"]);
  assert.equal(order.size, 0);
  assert.deepEqual(order.next(3), []);
});

test("a message brought into view goes next, ahead of the newer ones left, in the order preferred", () => {
  const order = openingOrder(ids);
  assert.deepEqual(order.next(2), ["m7", "m6"]);
  order.prefer("m2");
  order.prefer("m1");
  assert.deepEqual(order.next(3), ["m2", "m1", "m5"]);
  assert.deepEqual(order.next(5), ["m4", "m3"]);
});

test("preferring one taken already, one preferred twice, or one never given changes nothing", () => {
  const order = openingOrder(ids);
  assert.deepEqual(order.next(1), ["m7"]);
  order.prefer("m7");
  order.prefer("nope");
  order.prefer("m3");
  order.prefer("m3");
  assert.deepEqual(order.next(2), ["m3", "m6"]);
  assert.equal(order.size, 4);
  assert.deepEqual(order.next(10), ["m5", "m4", "m2", "m1"]);
});

test("every message is given exactly once, however preference and chunks interleave", () => {
  const many = Array.from({ length: 200 }, (_, i) => `id${i}`);
  const order = openingOrder(many);
  const given = [];
  for (let round = 0; order.size; round++) {
    order.prefer(many[(round * 37) % 200]);
    given.push(...order.next(1 + (round % 5)));
  }
  assert.equal(given.length, 200);
  assert.deepEqual([...given].sort(), [...many].sort());
});

test("the ids given are not changed", () => {
  const copy = [...ids];
  openingOrder(copy).next(7);
  assert.deepEqual(copy, ids);
});
