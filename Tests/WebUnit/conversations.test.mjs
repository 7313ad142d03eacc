// conversations.js: messages sorted into conversations by the other parties, requests told from
// conversations, blocked senders hidden, and an outgoing message's delivery in words.
import assert from "node:assert/strict";
import test from "node:test";

import {
  conversationKey,
  conversationTitle,
  deliveryPending,
  deliveryWords,
  keyNames,
  participants,
  sortConversations,
} from "../../Sources/CountersignWebClient/web/js/conversations.js";
import { isUsername } from "../../Sources/CountersignWebClient/web/js/rules.js";

let n = 0;
const at = (minute) => new Date(Date.UTC(2026, 10, 29, 12, minute)).toISOString();
const incoming = (from, minute, { to = ["alice"], read = false } = {}) =>
  ({ id: `m${++n}`, direction: "incoming", from, to, acceptedAt: at(minute), read });
const outgoing = (to, minute) => ({ id: `m${++n}`, direction: "outgoing", from: "alice", to, acceptedAt: at(minute) });

test("a conversation is the other parties, sorted; a group is all of them; a note to self is yourself", () => {
  assert.deepEqual(participants(incoming("bob", 1), "alice"), ["bob"]);
  assert.deepEqual(participants(outgoing(["bob"], 1), "alice"), ["bob"]);
  assert.equal(conversationKey(incoming("carol", 1, { to: ["alice", "bob"] }), "alice"), "bob,carol");
  assert.equal(conversationKey(outgoing(["carol", "bob", "alice"], 1), "alice"), "bob,carol");
  assert.equal(conversationKey(outgoing(["alice"], 1), "alice"), "alice");
  assert.equal(conversationTitle(["alice"], "alice"), "Note to self");
  assert.equal(conversationTitle(["bob", "carol"], "alice"), "bob, carol");
});

test("an address is a conversation key only when its names are usernames, sorted, each once", () => {
  assert.deepEqual(keyNames("bob", isUsername), ["bob"]);
  assert.deepEqual(keyNames("bob,carol", isUsername), ["bob", "carol"]);
  for (const bad of ["", "carol,bob", "bob,bob", "Bob", "b", "bob,", "<b>", "bob carol", undefined]) {
    assert.equal(keyNames(bad, isUsername), null, String(bad));
  }
});

test("conversations are newest first, their messages oldest first, with unread counts", () => {
  const messages = [
    outgoing(["bob"], 1),
    incoming("bob", 2, { read: true }),
    incoming("bob", 5),
    outgoing(["carol"], 3),
    incoming("carol", 4),
    incoming("carol", 6),
  ];
  const { conversations, requests } = sortConversations(messages, "alice");
  assert.deepEqual(conversations.map((c) => c.key), ["carol", "bob"]);
  assert.deepEqual(conversations[1].messages.map((m) => m.acceptedAt), [at(1), at(2), at(5)]);
  assert.deepEqual(conversations.map((c) => c.unread), [2, 1]);
  assert.equal(conversations[0].latest.acceptedAt, at(6));
  assert.deepEqual(requests, []);
});

test("a first message from a stranger is a request until accepted, or until you write to them", () => {
  const messages = [incoming("mallory", 1), incoming("bob", 2), outgoing(["bob"], 0)];
  let sorted = sortConversations(messages, "alice");
  assert.deepEqual(sorted.requests.map((c) => c.key), ["mallory"]);
  assert.deepEqual(sorted.conversations.map((c) => c.key), ["bob"]);
  sorted = sortConversations(messages, "alice", { accepted: new Set(["mallory"]) });
  assert.deepEqual(sorted.requests, []);
  assert.deepEqual(sorted.conversations.map((c) => c.key), ["bob", "mallory"]);
  // Written to in a group: known everywhere.
  sorted = sortConversations([...messages, outgoing(["mallory", "bob"], 3)], "alice");
  assert.deepEqual(sorted.requests, []);
  // A group opened by a stranger is a request; one where a known person writes is not.
  sorted = sortConversations([incoming("eve", 1, { to: ["alice", "bob"] }), outgoing(["bob"], 0)], "alice");
  assert.deepEqual(sorted.requests.map((c) => c.key), ["bob,eve"]);
  sorted = sortConversations([incoming("bob", 1, { to: ["alice", "eve"] }), outgoing(["bob"], 0)], "alice");
  assert.deepEqual(sorted.conversations.map((c) => c.key), ["bob,eve", "bob"]);
  // Your own messages from another device are never requests.
  sorted = sortConversations([incoming("alice", 1, { to: ["alice"] })], "alice");
  assert.deepEqual(sorted.conversations.map((c) => c.key), ["alice"]);
});

test("a blocked sender's messages are in no conversation, only counted", () => {
  const messages = [incoming("mallory", 1), incoming("mallory", 2), incoming("bob", 3), outgoing(["bob"], 0)];
  const sorted = sortConversations(messages, "alice", { blocked: new Set(["mallory", "trent"]) });
  assert.deepEqual(sorted.requests, []);
  assert.deepEqual(sorted.conversations.map((c) => c.key), ["bob"]);
  assert.deepEqual(sorted.blocked, [{ name: "mallory", hidden: 2 }, { name: "trent", hidden: 0 }]);
  // Blocked in a group: that sender's messages go, the others' stay.
  const group = [incoming("mallory", 1, { to: ["alice", "bob"] }), incoming("bob", 2, { to: ["alice", "mallory"] })];
  const kept = sortConversations([...group, outgoing(["bob"], 0)], "alice", { blocked: new Set(["mallory"]) });
  assert.deepEqual(kept.conversations.find((c) => c.key === "bob,mallory").messages.map((m) => m.from), ["bob"]);
});

test("delivery in words, from the server's acknowledgements", () => {
  const now = Date.parse(at(10));
  const status = (fields) => ({ recipientDevices: 2, acknowledgedBy: 0, deliverAt: at(0), cancelled: false, ...fields });
  assert.equal(deliveryWords(status({ acknowledgedBy: 2 }), now), "Delivered to 2 of 2 devices.");
  assert.equal(deliveryWords(status({ acknowledgedBy: 1 }), now), "Delivered to 1 of 2 devices.");
  assert.equal(deliveryWords(status({ recipientDevices: 1, acknowledgedBy: 1 }), now), "Delivered to 1 of 1 device.");
  assert.equal(deliveryWords(status({}), now), "Sent, not yet delivered.");
  assert.equal(deliveryWords(status({ recipientDevices: 0 }), now), "Sent to your own devices only.");
  assert.equal(deliveryWords(status({ cancelled: true }), now), "Cancelled before delivery.");
  assert.match(deliveryWords(status({ deliverAt: at(11) }), now), /^Held by the server until .+, then delivered to 2 devices\.$/);
  assert.equal(deliveryWords(null, now), "Delivery state unknown.");
  assert.equal(deliveryWords(status({ acknowledgedBy: 5 }), now), "Delivered to 2 of 2 devices.", "never more than all");
  assert.equal(deliveryPending(status({ acknowledgedBy: 1 })), true);
  assert.equal(deliveryPending(status({ acknowledgedBy: 2 })), false);
  assert.equal(deliveryPending(status({ cancelled: true })), false);
});
