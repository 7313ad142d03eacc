// The stored messages' read marks and the storage under them: messages.js's markRead marks a whole batch (a
// thread's chunk) in one transaction, each message with its fields as stored now and those read already left
// alone; keystore.js keeps one IndexedDB connection for every transaction and lets it go when another page
// upgrades or deletes the database. The page's storage is support/browser.mjs's stand-in.
import assert from "node:assert/strict";
import test from "node:test";

import { installBrowser } from "./support/browser.mjs";

installBrowser();

const { allFor, run } = await import("../../Sources/CountersignWebClient/web/js/keystore.js");
const { markRead } = await import("../../Sources/CountersignWebClient/web/js/messages.js");
const { session } = await import("../../Sources/CountersignWebClient/web/js/session.js");

const ACCOUNT = "acct-read-marks";
session.set({ token: "token", account: { id: ACCOUNT, username: "alice" } });

// Every IndexedDB connection opened and every transaction begun, counted from here on.
const counts = { opens: 0, transactions: 0 };
const connections = [];
const open = indexedDB.open.bind(indexedDB);
indexedDB.open = (...args) => {
  counts.opens++;
  const request = open(...args);
  queueMicrotask(() => {
    const db = request.result;
    connections.push(db);
    const begin = db.transaction.bind(db);
    db.transaction = (...a) => (counts.transactions++, begin(...a));
  });
  return request;
};

const record = (id, fields = {}) => ({
  key: `${ACCOUNT}/${id}`,
  accountId: ACCOUNT,
  id,
  direction: "incoming",
  from: "bob",
  to: ["alice"],
  envelope: "e30",
  acceptedAt: "2026-11-29T10:00:00Z",
  read: false,
  ...fields,
});

const stored = async () => new Map((await allFor("messages", ACCOUNT)).map((m) => [m.id, m]));

test("a batch's read marks are one transaction; read ones, and ones no longer stored, are left alone", async () => {
  for (const m of [record("a"), record("b"), record("c", { read: true })]) {
    await run("messages", "readwrite", (store) => store.put(m));
  }
  // Another tab changed "b" since the thread read it: its change is kept, only `read` is set.
  await run("messages", "readwrite", (store) => store.put(record("b", { local: { keyId: "k" } })));
  const before = counts.transactions;
  await markRead([record("a"), record("b"), record("c", { read: true }), record("gone")]);
  assert.equal(counts.transactions - before, 1, "one transaction for the batch");
  const rows = await stored();
  assert.equal(rows.get("a").read, true);
  assert.equal(rows.get("b").read, true);
  assert.deepEqual(rows.get("b").local, { keyId: "k" }, "the other tab's change kept");
  assert.equal(rows.get("c").read, true);
  assert.equal(rows.has("gone"), false, "a message deleted meanwhile is not put back");
});

test("a batch with nothing unread begins no transaction", async () => {
  const before = counts.transactions;
  await markRead([]);
  await markRead([record("a", { read: true })]);
  assert.equal(counts.transactions, before);
});

test("one connection serves every transaction, and is let go when another page needs the database", async () => {
  const opens = counts.opens;
  for (let i = 0; i < 20; i++) await run("messages", "readonly", (store) => store.get(`${ACCOUNT}/a`));
  assert.equal(counts.opens - opens, 0, "the connection of the tests before serves these 20 too");
  const db = connections.at(-1);
  let closed = false;
  db.close = () => (closed = true);
  db.onversionchange?.();
  assert.equal(closed, true, "closed for the other page's upgrade or deletion");
  const row = await run("messages", "readonly", (store) => store.get(`${ACCOUNT}/a`));
  assert.equal(row.read, true);
  assert.equal(counts.opens - opens, 1, "a new connection after, one in all");
  assert.notEqual(connections.at(-1), db);
});
