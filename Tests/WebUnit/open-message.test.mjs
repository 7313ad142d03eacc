// messages.js's openMessage with opened copies (opened-copy.js): the first showing verifies and decrypts the
// envelope and hands back a copy, which markRead keeps with the read mark; the next showing decrypts only the
// copy (no signature checked again) and says so in its steps, yet the pins still decide who signed: a key
// retired before the message was signed refuses it, copy or not. An altered copy is passed over for the
// envelope. Storage and server are support/browser.mjs's stand-ins.
import assert from "node:assert/strict";
import test from "node:test";

import { installBrowser } from "./support/browser.mjs";

const server = installBrowser();

const { base64url, fromBase64url, sha256 } = await import("../../Sources/CountersignWebClient/web/js/bytes.js");
const { makeDeviceKeys } = await import("../../Sources/CountersignWebClient/web/js/device-keys.js");
const { parse, seal } = await import("../../Sources/CountersignWebClient/web/js/envelope.js");
const { makeCopy } = await import("../../Sources/CountersignWebClient/web/js/opened-copy.js");
const { run } = await import("../../Sources/CountersignWebClient/web/js/keystore.js");
const { rawPoint } = await import("../../Sources/CountersignWebClient/web/js/hpke.js");
const messages = await import("../../Sources/CountersignWebClient/web/js/messages.js");
const pins = await import("../../Sources/CountersignWebClient/web/js/pins.js");
const { session } = await import("../../Sources/CountersignWebClient/web/js/session.js");
const { at, deviceKeys, directory, iso } = await import("./support/directories.mjs");
const { fromHex } = await import("./support/vectors.mjs");

session.set({ token: "account-token", account: { id: "acc-bob", username: "bob" } });
const record = { accountId: "acc-bob", deviceId: "b1", ...(await makeDeviceKeys()) };
const own = await messages.ownIdentity(record);
const alice = await deviceKeys();
const listed = await directory("alice", "a1", [alice], [0]);
const serve = (dir) => server.routes.set("GET /v1/users/alice/devices", structuredClone(dir));
serve(listed);
await pins.trust(listed, own, at(1));

/** A message from alice to this device, signed at `signed` (seconds), stored as the inbox stores it. */
async function received(text, signed = 10) {
  const bytes = await seal({
    plaintext: new TextEncoder().encode(text),
    senderKeyId: fromHex(alice.signingId),
    signingKey: alice.signing.privateKey,
    recipients: [{ keyId: fromHex(own.encryptionKeyId), point: await rawPoint(record.encryption.publicKey) }],
    created: at(signed),
  });
  const id = Buffer.from(parse(bytes).messageId).toString("hex");
  const entry = { id, direction: "incoming", from: "alice", to: ["bob"], envelope: base64url(bytes), acceptedAt: iso(at(signed)) };
  assert.equal(await messages.store(entry), true);
  return messages.get(id);
}

/** openMessage's answer and its steps, with how many ECDSA signatures it checked. */
async function opening(message, options = {}) {
  const verify = crypto.subtle.verify;
  let checked = 0;
  crypto.subtle.verify = (...args) => ((checked += 1), verify.apply(crypto.subtle, args));
  const steps = [];
  try {
    const opened = await messages.openMessage(record, message, (s) => steps.push(s), { markAsRead: false, ...options });
    return { opened, steps, checked };
  } finally {
    crypto.subtle.verify = verify;
  }
}

test("the second showing decrypts the copy kept with the read mark, and says so", async () => {
  const message = await received("hello from alice");
  const first = await opening(message);
  assert.equal(first.opened.text, "hello from alice");
  assert.equal(first.checked, 1, "the envelope's signature checked");
  assert.deepEqual(first.steps, ["Signature verified", "String decrypted"]);
  assert.ok(first.opened.copy, "a copy to keep");
  await messages.markRead([message], { copies: new Map([[message.id, first.opened.copy]]) });
  const kept = await messages.get(message.id);
  assert.equal(kept.read, true);
  assert.equal(JSON.stringify(kept).includes("hello from alice"), false, "the text is not stored in clear");

  const second = await opening(kept);
  assert.equal(second.opened.text, "hello from alice");
  assert.equal(second.checked, 0, "no signature checked again");
  assert.equal(second.opened.copy, undefined, "nothing new to keep");
  assert.match(second.steps[0], /^Signature verified \(.+, when first opened here\)$/);
  assert.equal(second.steps[1], "String decrypted from this browser's opened copy");
});

test("an altered copy, or one of another message, is passed over for the envelope", async () => {
  const message = await received("the envelope decides");
  const { opened } = await opening(message);
  const ct = fromBase64url(opened.copy.ct);
  ct[0] ^= 1;
  const altered = await opening({ ...message, opened: { ...opened.copy, ct: base64url(ct) } });
  assert.equal(altered.opened.text, "the envelope decides");
  assert.equal(altered.checked, 1, "the envelope opened instead");
  assert.ok(altered.opened.copy, "and a copy made anew");
  const other = await received("another message");
  const moved = await opening({ ...other, opened: opened.copy });
  assert.equal(moved.opened.text, "another message", "a copy moved from another message is not used");
  assert.equal(moved.checked, 1);
});

test("the pins still decide: a key retired before the message was signed refuses it, copy or not", async () => {
  const message = await received("signed at 10 s", 10);
  const { opened } = await opening(message);
  const withCopy = { ...message, opened: opened.copy };
  // The server now says alice's key was retired at 5 s, before the message: refused from the copy too.
  const retired = structuredClone(listed);
  retired.history[0].retiredAt = iso(at(5));
  serve(retired);
  try {
    await assert.rejects(opening(withCopy), (error) => error instanceof pins.PinError && /retired before/.test(error.message));
  } finally {
    serve(listed);
  }
  assert.equal((await opening(withCopy)).opened.text, "signed at 10 s");
});

test("a copy is read only with the key pair it was made for", async () => {
  const message = await received("for b1's keys");
  const { opened } = await opening(message);
  const otherRecord = { accountId: "acc-bob", deviceId: "b1", ...(await makeDeviceKeys()) };
  // The device's keys replaced without the old pair kept: the copy is not for the new pair (it is not read),
  // and the envelope is not sealed to it either.
  await assert.rejects(
    messages.openMessage(otherRecord, { ...message, opened: opened.copy }, () => {}, { markAsRead: false }),
    /not for this key|sealed to/,
  );
});

test("keeping history when the keys change: a message not checked because the server was unreachable stops it", async () => {
  // carol wrote first (a request) and is pinned nowhere here: her key can be checked only in the directory.
  const carol = await deviceKeys();
  server.routes.set("GET /v1/users/carol/devices", structuredClone(await directory("carol", "c1", [carol], [0])));
  const bytes = await seal({
    plaintext: new TextEncoder().encode("from a stranger"),
    senderKeyId: fromHex(carol.signingId),
    signingKey: carol.signing.privateKey,
    recipients: [{ keyId: fromHex(own.encryptionKeyId), point: await rawPoint(record.encryption.publicKey) }],
    created: at(20),
  });
  const id = Buffer.from(parse(bytes).messageId).toString("hex");
  await messages.store({ id, direction: "incoming", from: "carol", to: ["bob"], envelope: base64url(bytes), acceptedAt: iso(at(20)) });
  const keys = await makeDeviceKeys();
  server.offline = true;
  try {
    await assert.rejects(messages.keepHistory(record, keys), /could not be checked now: the server could not be asked/);
  } finally {
    server.offline = false;
  }
  assert.equal((await messages.get(id)).local, undefined, "not re-sealed while unchecked");
  await messages.keepHistory(record, keys);
  const kept = await messages.get(id);
  assert.ok(kept.local, "re-sealed once checked");
  assert.equal((await pins.pinOfUser("carol")), undefined, "re-sealing a stranger's request does not pin them");
  const reopened = await messages.openMessage({ ...record, ...keys, previous: [] }, kept, () => {}, { markAsRead: false });
  assert.equal(reopened.text, "from a stranger");
});

test("a copy is for its envelope and its signer: another envelope, or another signer named, opens the envelope", async () => {
  const message = await received("signed at 10 s, by alice's key", 10);
  const { opened } = await opening(message);
  // The stored envelope's signed time rewritten (to slip under a retirement, say): the copy is bound to the
  // bytes it was made for, so the rewritten envelope is opened itself, and its signature fails.
  const bytes = fromBase64url(message.envelope);
  const rewritten = Uint8Array.from(bytes);
  rewritten[8 + 1 + 16 + 16 + 7] ^= 0x01; // the low byte of `created` (magic, version, key ID, message ID)
  const moved = await refusedOrText(opening({ ...message, envelope: base64url(rewritten), opened: opened.copy }));
  assert.match(moved, /signature/, "the rewritten envelope opened itself, and refused");
  // A copy this device made (its key, this envelope) that names another signer key is not used.
  const keys = { privateKey: record.encryption.privateKey, point: await rawPoint(record.encryption.publicKey) };
  const other = await makeCopy({
    accountId: message.accountId,
    messageId: message.id,
    envelopeHash: await sha256(bytes),
    content: { text: "planted", signerKeyId: "00".repeat(16), verifiedAt: 1 },
    pair: keys,
    keyId: own.encryptionKeyId,
  });
  const signer = await opening({ ...message, opened: other });
  assert.equal(signer.opened.text, "signed at 10 s, by alice's key");
  assert.equal(signer.checked, 1, "the envelope opened instead");
});

test("markRead keeps a copy with what another tab changed meanwhile, and marks only those asked", async () => {
  const a = await received("first");
  const b = await received("second");
  const copyA = (await opening(a)).opened.copy;
  // Another tab re-sealed "a" meanwhile (a field this tab's object does not have).
  await run("messages", "readwrite", (store) => store.put({ ...a, local: { keyId: "from another tab" } }));
  await messages.markRead([b], { copies: new Map([[a.id, copyA]]) });
  const [storedA, storedB] = [await messages.get(a.id), await messages.get(b.id)];
  assert.deepEqual(storedA.local, { keyId: "from another tab" }, "the other tab's change is kept");
  assert.deepEqual(storedA.opened, copyA);
  assert.equal(storedA.read, false, "a copy alone does not mark read");
  assert.equal(storedB.read, true);
  assert.equal(storedB.opened, undefined);
});

async function refusedOrText(promise) {
  try {
    return (await promise).opened.text;
  } catch (error) {
    return `refused: ${error.message}`;
  }
}

test("what arrives is opened in the background once: its copy kept, nothing marked read, a refused one left", async () => {
  const first = await received("arrived one", 30);
  const second = await received("arrived two", 31);
  const shown = await received("shown already", 32);
  const { opened } = await opening(shown);
  await messages.markRead([], { copies: new Map([[shown.id, opened.copy]]) });
  const kept = (await messages.get(shown.id)).opened;
  // A message from a sender whose directory lists no key that signed it: refused, left as it is.
  const stranger = await deviceKeys();
  const forged = await seal({
    plaintext: new TextEncoder().encode("forged"),
    senderKeyId: fromHex(stranger.signingId),
    signingKey: stranger.signing.privateKey,
    recipients: [{ keyId: fromHex(own.encryptionKeyId), point: await rawPoint(record.encryption.publicKey) }],
    created: at(33),
  });
  const forgedId = Buffer.from(parse(forged).messageId).toString("hex");
  const entry = { id: forgedId, direction: "incoming", from: "alice", to: ["bob"], envelope: base64url(forged),
    acceptedAt: iso(at(33)) };
  assert.equal(await messages.store(entry), true);

  const ids = [first.id, second.id, shown.id, forgedId, "0".repeat(32)];
  assert.equal(await messages.keepCopies(record, ids), 2, "the two new ones");
  for (const id of [first.id, second.id]) {
    const stored = await messages.get(id);
    assert.ok(stored.opened, "copy kept");
    assert.equal(stored.read, false, "not read: nobody saw it");
    const again = await opening(stored);
    assert.equal(again.checked, 0, "shown from the copy");
    assert.match(again.opened.text, /^arrived /);
  }
  assert.deepEqual((await messages.get(shown.id)).opened, kept, "an existing copy is left as it is");
  const refused = await messages.get(forgedId);
  assert.equal(refused.opened, undefined);
  await assert.rejects(opening(refused));
});
