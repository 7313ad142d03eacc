// device.js's proveKeysOnce (PROTOCOL §1.3): a browser device registered before servers kept key proofs gives
// one for its current keys, signed by its signing key over the registration message with its account and both
// keys; a device whose key has one gives nothing; either way it asks once. The page's storage (IndexedDB) and
// the server (fetch) are stood in for by support/browser.mjs.
import assert from "node:assert/strict";
import test from "node:test";

import { installBrowser } from "./support/browser.mjs";

const server = installBrowser();

const { base64url, fromBase64url } = await import("../../Sources/CountersignWebClient/web/js/bytes.js");
const { makeDeviceKeys, registrationMessage, spki, verifyLowS } = await import(
  "../../Sources/CountersignWebClient/web/js/device-keys.js"
);
const { keystore } = await import("../../Sources/CountersignWebClient/web/js/keystore.js");
const { proveKeysOnce } = await import("../../Sources/CountersignWebClient/web/js/device.js");

const PUT = "PUT /v1/devices/current/key-proof";

/** A device of `accountId` kept here, and the directory entry the server lists for its key. */
async function device(accountId, keyProof) {
  const keys = await makeDeviceKeys();
  await keystore.save({ accountId, deviceId: "d1", signing: keys.signing, encryption: keys.encryption, createdAt: 0 });
  const signingSpki = await spki(keys.signing.publicKey);
  const encryptionSpki = await spki(keys.encryption.publicKey);
  const entry = {
    deviceId: "d1",
    signingKey: base64url(signingSpki),
    encryptionKey: base64url(encryptionSpki),
    addedAt: new Date(0).toISOString(),
    ...(keyProof && { keyProof }),
  };
  return { signingSpki, encryptionSpki, entry };
}

test("a device without a proof gives one, over its account and keys, once", async () => {
  const account = { id: "acct-1", username: "ada" };
  const { signingSpki, encryptionSpki, entry } = await device(account.id);
  const sent = [];
  server.calls.length = 0;
  server.routes.set("GET /v1/users/ada/devices", { username: "ada", devices: [], history: [entry] });
  server.routes.set(PUT, (body) => {
    sent.push(body);
    return [204, null];
  });
  await proveKeysOnce(account, "csd_token");
  assert.equal(sent.length, 1);
  const challenge = fromBase64url(sent[0].challenge);
  assert.equal(challenge.length, 32);
  const message = await registrationMessage(challenge, account.id, signingSpki, encryptionSpki);
  assert.ok(await verifyLowS(signingSpki, message, fromBase64url(sent[0].signature)), "signed by the device key");
  assert.equal((await keystore.device(account.id)).keysProven, entry.signingKey, "noted for this key");
  await proveKeysOnce(account, "csd_token");
  assert.deepEqual(server.calls, ["GET /v1/users/ada/devices", PUT], "asked once");
});

test("a device whose key has a proof, or is not the one listed, gives none", async () => {
  const account = { id: "acct-2", username: "bea" };
  const { entry } = await device(account.id, { statement: "registration", signature: "x" });
  server.calls.length = 0;
  server.routes.set("GET /v1/users/bea/devices", { username: "bea", devices: [], history: [entry] });
  await proveKeysOnce(account, "csd_token");
  assert.deepEqual(server.calls, ["GET /v1/users/bea/devices"]);
  assert.equal((await keystore.device(account.id)).keysProven, entry.signingKey);

  const other = { id: "acct-3", username: "cai" };
  await device(other.id);
  server.calls.length = 0;
  server.routes.set("GET /v1/users/cai/devices", { username: "cai", devices: [], history: [] });
  await proveKeysOnce(other, "csd_token");
  assert.deepEqual(server.calls, ["GET /v1/users/cai/devices"], "nothing to prove for a key not listed");
  assert.equal((await keystore.device(other.id)).keysProven, undefined, "asked again next time");
});

test("what changed in the record meanwhile (a gate, say) is kept when the proof is noted", async () => {
  const account = { id: "acct-4", username: "dov" };
  const { entry } = await device(account.id);
  server.routes.set("GET /v1/users/dov/devices", { username: "dov", devices: [], history: [entry] });
  server.routes.set(PUT, async () => {
    // Another tab changes the record while the proof is on its way.
    await keystore.updateGate(account.id, () => ({ kind: "password", attempts: 2 }));
    return [204, null];
  });
  await proveKeysOnce(account, "csd_token");
  const record = await keystore.device(account.id);
  assert.equal(record.keysProven, entry.signingKey);
  assert.deepEqual(record.gate, { kind: "password", attempts: 2 }, "not overwritten by the copy read before");
});
