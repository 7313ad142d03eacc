// events.js: the page's one way to send signals. Listeners hear their topic only, in the order they were
// added, and stop when told; an unknown topic throws; clear() removes a topic's listeners. And no module
// of the web client sends a signal another way: no window or document event of its own, no listener set.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import test from "node:test";

import { WEB } from "./support/web.mjs";

const { TOPICS, clear, emit, on } = await import(`${WEB}js/events.js`);

test("listeners hear their topic, in order, until they stop", () => {
  const heard = [];
  const a = on("inbox", (event) => heard.push(["a", event.kind]));
  const b = on("inbox", (event) => heard.push(["b", event.kind]));
  const other = on("authenticator", (event) => heard.push(["other", event.kind]));
  emit("inbox", { kind: "message" });
  a();
  emit("inbox", { kind: "state" });
  b();
  other();
  emit("inbox", { kind: "moved-here" });
  assert.deepEqual(heard, [
    ["a", "message"],
    ["b", "message"],
    ["b", "state"],
  ]);
});

test("a listener added twice is called once, and one stop removes it", () => {
  let calls = 0;
  const listener = () => calls++;
  on("wiped", listener);
  const stop = on("wiped", listener);
  emit("wiped", "words");
  stop();
  emit("wiped", "words");
  assert.equal(calls, 1);
});

test("a listener that stops itself, or a later one, while the topic is told", () => {
  const heard = [];
  let stopLater = null;
  const first = on("gate-changed", ({ unlocked }) => {
    heard.push(["first", unlocked]);
    first();
    stopLater();
  });
  stopLater = on("gate-changed", () => heard.push(["later"]));
  emit("gate-changed", { accountId: "a", unlocked: true });
  emit("gate-changed", { accountId: "a", unlocked: false });
  assert.deepEqual(heard, [["first", true]]);
});

test("what a listener throws reaches the emitter", () => {
  const stop = on("screen-changed", () => {
    throw new Error("listener failed");
  });
  try {
    assert.throws(() => emit("screen-changed"), /listener failed/);
  } finally {
    stop();
  }
});

test("clear() removes every listener of one topic", () => {
  const heard = [];
  on("drop-decrypted", () => heard.push("one"));
  on("drop-decrypted", () => heard.push("two"));
  const kept = on("session-ended", () => heard.push("kept"));
  clear("drop-decrypted");
  emit("drop-decrypted");
  emit("session-ended");
  kept();
  assert.deepEqual(heard, ["kept"]);
});

test("an unknown topic throws, whether listened to, told or cleared", () => {
  assert.throws(() => on("session-end", () => {}), /No such signal: session-end/);
  assert.throws(() => emit("wipe"), /No such signal/);
  assert.throws(() => clear("inboxes"), /No such signal/);
  assert.ok(Object.isFrozen(TOPICS));
});

/** Every .js file of the client, with its text. */
const modules = readdirSync(join(WEB, "js"), { recursive: true })
  .filter((name) => name.endsWith(".js"))
  .map((name) => ({ name, text: readFileSync(join(WEB, "js", name), "utf8") }));

test("every topic the client emits or listens to is one of events.js's, and each is both", () => {
  const emitted = new Set();
  const heard = new Set();
  for (const { text } of modules) {
    for (const [, topic] of text.matchAll(/\bemit\("([^"]+)"/g)) emitted.add(topic);
    for (const [, topic] of text.matchAll(/\bon\("([^"]+)"/g)) heard.add(topic);
  }
  const topics = Object.keys(TOPICS).sort();
  assert.deepEqual([...new Set([...emitted, ...heard])].sort(), topics);
  assert.deepEqual([...emitted].sort(), topics, "emitted");
  assert.deepEqual([...heard].sort(), topics, "listened to");
});

test("no module sends a signal another way: no CustomEvent, no dispatchEvent, no listener set", () => {
  const other = [];
  for (const { name, text } of modules) {
    if (name === "events.js") continue;
    if (/\bCustomEvent\b|\bdispatchEvent\(/.test(text)) other.push(`${name}: a DOM event of its own`);
    if (/\b\w*listeners\s*=\s*new (Set|Map)\b/i.test(text)) other.push(`${name}: a listener set`);
    // dom.js's `feedback` watches its own two paragraphs to move the focus to what they say: no signal.
    const focusOnly = name === "dom.js" && /new MutationObserver\(\(\) => \{\n\s+const was = said;/.test(text);
    if (/new MutationObserver\(/.test(text) && !/new MutationObserver\(\(\) => emit\(/.test(text) && !focusOnly) {
      other.push(`${name}: a MutationObserver that does not emit`);
    }
  }
  assert.deepEqual(other, []);
});
