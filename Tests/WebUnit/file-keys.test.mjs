// file-keys.js: the file key pair (docs/SPEC.md §2.1), one P-256 scalar imported twice (ECDH to open,
// ECDSA to sign), never readable back; and the account's key kept in IndexedDB (stood in for by
// support/browser.mjs).
import assert from "node:assert/strict";
import test from "node:test";

import { installBrowser } from "./support/browser.mjs";

installBrowser();
const { fileKeys, generateIdentity, identityFromPKCS8, importIdentity } = await import(
  "../../Sources/CountersignWebClient/web/js/file-keys.js"
);
const { keyIdOf, parsePublicKey } = await import("../../Sources/CountersignWebClient/web/js/pem.js");
const { text } = await import("./support/vectors.mjs");

test("an identity from a key file: its point, its key ID, and keys that cannot be read back", async () => {
  const identity = await importIdentity(text("keys/openssl-p256.key.pem"), async () => assert.fail("not encrypted"));
  const point = await parsePublicKey(text("keys/openssl-p256.pub.pem"));
  assert.deepEqual(identity.point, point);
  assert.deepEqual(identity.keyId, await keyIdOf(point));
  for (const key of [identity.agreement, identity.signing]) {
    assert.equal(key.extractable, false);
    await assert.rejects(crypto.subtle.exportKey("pkcs8", key));
  }
  assert.deepEqual(identity.agreement.usages, ["deriveBits"]);
  assert.deepEqual(identity.signing.usages, ["sign"]);
});

test("the two halves are one scalar: what it signs verifies under its point, what is sealed to it opens", async () => {
  const identity = await generateIdentity();
  const message = new TextEncoder().encode("one scalar");
  const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, identity.signing, message);
  const ecdsa = { name: "ECDSA", namedCurve: "P-256" };
  const verifier = await crypto.subtle.importKey("raw", identity.point, ecdsa, false, ["verify"]);
  assert.ok(await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, verifier, signature, message));
  const peer = await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"]);
  const mine = await crypto.subtle.importKey("raw", identity.point, { name: "ECDH", namedCurve: "P-256" }, false, []);
  const peerPoint = await crypto.subtle.importKey(
    "raw",
    await crypto.subtle.exportKey("raw", peer.publicKey),
    { name: "ECDH", namedCurve: "P-256" },
    false,
    [],
  );
  const a = await crypto.subtle.deriveBits({ name: "ECDH", public: mine }, peer.privateKey, 256);
  const b = await crypto.subtle.deriveBits({ name: "ECDH", public: peerPoint }, identity.agreement, 256);
  assert.deepEqual(new Uint8Array(a), new Uint8Array(b));
});

test("a PrivateKeyInfo that holds no valid P-256 key is a malformed key", async () => {
  await assert.rejects(identityFromPKCS8(Uint8Array.of(0x30, 0x00)), { kind: "malformed key" });
  const identity = await generateIdentity();
  assert.notDeepEqual(identity.point, (await generateIdentity()).point);
});

test("one file key an account: saved, read back usable, replaced and removed", async () => {
  const first = await generateIdentity();
  await fileKeys.save("acc-1", first, "generated");
  const stored = await fileKeys.get("acc-1");
  assert.equal(stored.origin, "generated");
  assert.deepEqual(stored.point, first.point);
  const second = await generateIdentity();
  await fileKeys.save("acc-1", second, "imported");
  assert.deepEqual((await fileKeys.get("acc-1")).point, second.point);
  assert.equal(await fileKeys.get("acc-2"), undefined);
  await fileKeys.remove("acc-1");
  assert.equal(await fileKeys.get("acc-1"), undefined);
});
