// gate-keys.js across tabs (SPEC §14.7), two module instances in one process standing in for two tabs of a
// profile over a real BroadcastChannel: a tab that asks gets the open gate, a lock reaches the other, and a
// share of a gate opened before the last lock a tab saw (messages from different tabs arrive in any order) is
// refused, as is one for an account the tab does not show, or one whose deadline has passed.
import assert from "node:assert/strict";
import test from "node:test";

// The module's channels must not keep the test process alive (a browser has no such notion).
const Channel = globalThis.BroadcastChannel;
globalThis.BroadcastChannel = class extends Channel {
  constructor(name) {
    super(name);
    this.unref();
  }
};
globalThis.document = { visibilityState: "visible", addEventListener() {} };
globalThis.window = { addEventListener() {} };
const WEB = "../../Sources/CountersignWebClient/web/js/gate-keys.js";
const one = await import(`${WEB}?tab=1`);
const two = await import(`${WEB}?tab=2`);
const raw = new Channel("countersign gate");
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));
// Stand-ins for the CryptoKeys (which node's BroadcastChannel cannot clone; Chromium's can, and the browser
// test test_one_unlock_serves_every_tab_and_a_lock_locks_all sends real ones): the module only keeps them.
const key = (name) => ({ stand_in: name });

test("one unlock serves the other tab, a lock locks both, and stale or foreign shares are refused", async () => {
  const gateKey = key("gate");
  one.remember("acct", gateKey, new Map([["k1", key("signing")]]), Date.now() + 60_000);
  assert.equal(await two.askTabs("acct", 1_000), true, "the asking tab gets the open gate");
  assert.equal(two.isUnlocked("acct"), true);
  two.lock("acct");
  await settle();
  assert.equal(one.isUnlocked("acct"), false, "the lock reached the first tab");
  // A share of a gate opened before that lock, arriving late: refused.
  raw.postMessage({ kind: "share", accountId: "acct", gateKey, keys: [], until: Date.now() + 60_000, openedAt: Date.now() - 5_000 });
  await settle();
  assert.equal(two.isUnlocked("acct"), false, "a share older than the last lock is refused");
  // Opened after the lock: taken. For another account, or past its deadline: not.
  raw.postMessage({ kind: "share", accountId: "other", gateKey, keys: [], until: Date.now() + 60_000, openedAt: Date.now() + 1 });
  raw.postMessage({ kind: "share", accountId: "acct", gateKey, keys: [], until: Date.now() - 1, openedAt: Date.now() + 1 });
  await settle();
  assert.equal(two.isUnlocked("other"), false, "not an account this tab shows");
  assert.equal(two.isUnlocked("acct"), false, "past its deadline");
  raw.postMessage({ kind: "share", accountId: "acct", gateKey, keys: [], until: Date.now() + 60_000, openedAt: Date.now() + 1 });
  await settle();
  assert.equal(two.isUnlocked("acct"), true, "a share opened after the lock is taken");
  two.want(null);
  two.lock();
  raw.close();
});
