// stay-signed-in.js's resumption (PROTOCOL §1.1): the nonce the last binding or resumption gave is signed at
// once (one request), once; spent or expired, a fresh nonce is asked for; an ended binding is not retried.
// The page's storage (IndexedDB) and the server (fetch) are stood in for by support/browser.mjs.
import assert from "node:assert/strict";
import test from "node:test";

import { installBrowser } from "./support/browser.mjs";

const server = installBrowser();

const { base64url, fromBase64url } = await import("../../Sources/CountersignWebClient/web/js/bytes.js");
const { resumptionMessage, spki, verifyLowS } = await import(
  "../../Sources/CountersignWebClient/web/js/device-keys.js"
);
const { run } = await import("../../Sources/CountersignWebClient/web/js/keystore.js");
const { resume, savedBinding } = await import("../../Sources/CountersignWebClient/web/js/stay-signed-in.js");

const CHALLENGES = "POST /v1/session-resumptions/challenges";
const RESUME = "POST /v1/session-resumptions";
const nonce = (byte) => base64url(new Uint8Array(32).fill(byte));
const later = (ms) => new Date(Date.now() + ms).toISOString();

/** A binding of this browser's own key, kept with `nextNonce`; the key's public SPKI. */
async function saved(nextNonce) {
  const { privateKey, publicKey } = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, [
    "sign",
    "verify",
  ]);
  const record = { slot: "current", id: "sb_1", accountId: "acct", username: "alice", deviceId: null, privateKey };
  await run("bindings", "readwrite", (store) => store.put({ ...record, nextNonce }));
  return { binding: await savedBinding(), publicSpki: await spki(publicKey) };
}

/** The server's side: every resumption body seen; answers `answer(body)`. */
function serve(answer, fresh = nonce(3)) {
  const seen = [];
  server.calls.length = 0;
  server.routes.set(CHALLENGES, [201, { challenge: fresh, expiresAt: later(300_000) }]);
  server.routes.set(RESUME, (body) => {
    seen.push(body);
    return answer(body);
  });
  return seen;
}

const resumed = (next) => [
  201,
  { token: "cs_t", expiresAt: later(3_600_000), account: { id: "acct" }, nextNonce: next },
];

test("the kept nonce resumes in one request, signed by the bound key, and the next one is kept", async () => {
  const { binding, publicSpki } = await saved({ challenge: nonce(1), expiresAt: later(3_600_000) });
  const seen = serve(() => resumed({ challenge: nonce(2), expiresAt: later(3_600_000) }));
  const body = await resume(binding);
  assert.equal(body.token, "cs_t");
  assert.deepEqual(server.calls, [RESUME], "no nonce asked for");
  assert.equal(seen[0].nonce, nonce(1));
  const message = await resumptionMessage(fromBase64url(seen[0].nonce), "sb_1");
  assert.ok(await verifyLowS(publicSpki, message, fromBase64url(seen[0].signature)));
  assert.equal((await savedBinding()).nextNonce.challenge, nonce(2));
});

test("a kept nonce the server no longer takes (another tab spent it) falls back to a fresh one", async () => {
  const { binding } = await saved({ challenge: nonce(1), expiresAt: later(3_600_000) });
  const seen = serve((body) =>
    body.nonce === nonce(1) ? [400, { code: "challenge-invalid" }] : resumed({ challenge: nonce(4), expiresAt: later(1e6) }),
  );
  await resume(binding);
  assert.deepEqual(server.calls, [RESUME, CHALLENGES, RESUME]);
  assert.deepEqual(seen.map((b) => b.nonce), [nonce(1), nonce(3)]);
  assert.equal((await savedBinding()).nextNonce.challenge, nonce(4));
});

test("a kept nonce is signed once: cleared before it is sent, so a failed reload does not send it again", async () => {
  const { binding } = await saved({ challenge: nonce(1), expiresAt: later(3_600_000) });
  const keptWhenSent = [];
  serve(async () => {
    keptWhenSent.push((await savedBinding()).nextNonce);
    return [503, { code: "unavailable" }];
  });
  await assert.rejects(resume(binding));
  assert.deepEqual(keptWhenSent, [null], "cleared before the request");
  // The next reload reads the binding again: nothing kept, so it asks for a fresh nonce.
  const seen = serve(() => resumed(undefined));
  await resume(await savedBinding());
  assert.deepEqual(server.calls, [CHALLENGES, RESUME]);
  assert.equal(seen[0].nonce, nonce(3));
});

test("an expired or malformed kept nonce is not sent; an ended binding is not retried", async () => {
  for (const kept of [{ challenge: nonce(1), expiresAt: later(30_000) }, { expiresAt: later(1e6) }, null]) {
    const { binding } = await saved(kept);
    const seen = serve(() => resumed(undefined));
    await resume(binding);
    assert.deepEqual(server.calls, [CHALLENGES, RESUME], JSON.stringify(kept));
    assert.equal(seen[0].nonce, nonce(3));
  }
  const { binding } = await saved({ challenge: nonce(1), expiresAt: later(3_600_000) });
  serve(() => [401, { code: "sign-in-ended" }]);
  await assert.rejects(resume(binding), (error) => error.code === "sign-in-ended");
  assert.deepEqual(server.calls, [RESUME], "the binding ended: no second try");
});

/** A binding of this browser's own key whose move to the device `dev_1`'s key was sent but never stored
 *  (the page left before the answer); the device's keys stored. The two keys' public SPKIs. */
async function rebinding() {
  const pair = () => crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"]);
  const own = await pair();
  const device = await pair();
  await run("devices", "readwrite", (store) =>
    store.put({ accountId: "acct", deviceId: "dev_1", signing: { privateKey: device.privateKey, publicKey: device.publicKey } }),
  );
  const record = { slot: "current", id: "sb_1", accountId: "acct", username: "alice", deviceId: null,
    privateKey: own.privateKey, rebinding: "dev_1", nextNonce: { challenge: nonce(1), expiresAt: later(1e6) } };
  await run("bindings", "readwrite", (store) => store.put(record));
  return { binding: await savedBinding(), own: await spki(own.publicKey), device: await spki(device.publicKey) };
}

/** The server's side when it holds `key` for the binding: a resumption signed by another key has ended. */
const holding = (key) => async (body) => {
  const message = await resumptionMessage(fromBase64url(body.nonce), "sb_1");
  return (await verifyLowS(key, message, fromBase64url(body.signature)))
    ? resumed({ challenge: nonce(5), expiresAt: later(1e6) })
    : [401, { code: "sign-in-ended" }];
};

test("a move to the device's key that reached the server resumes with the device's key and is then stored", async () => {
  const { binding, device } = await rebinding();
  const seen = serve(holding(device));
  assert.equal((await resume(binding)).token, "cs_t");
  assert.equal(seen.length, 1, "the device's key first");
  const stored = await savedBinding();
  assert.equal(stored.deviceId, "dev_1");
  assert.equal(stored.privateKey, null, "the browser's own key is dropped");
  assert.equal(stored.rebinding, null);
  assert.equal(stored.nextNonce.challenge, nonce(5));
});

test("a move to the device's key that never reached the server resumes with the binding's own key", async () => {
  const { binding, own } = await rebinding();
  const seen = serve(holding(own));
  assert.equal((await resume(binding)).token, "cs_t");
  assert.equal(seen.length, 2, "the device's key refused, then the binding's own");
  assert.deepEqual(server.calls, [CHALLENGES, RESUME, CHALLENGES, RESUME], "a fresh nonce for each key");
  const stored = await savedBinding();
  assert.equal(stored.deviceId, null, "still the browser's own binding");
  assert.equal(stored.rebinding, null, "its own key first from now on");
  // Both keys refused: the binding has ended, and that is what the caller hears.
  serve(() => [401, { code: "sign-in-ended" }]);
  await assert.rejects(resume(await rebinding().then((r) => r.binding)), (error) => error.code === "sign-in-ended");
});
