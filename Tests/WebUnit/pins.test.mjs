// pins.js: trust on first use, written from the Swift rules it follows (Sources/CountersignClient/
// KeyPins.swift, tested by Tests/CountersignCLITests/KeyPinsTests.swift): a rotation is followed only when
// the pinned key signed it, a forged, flipped, swapped or forked one is not, a retired key verifies only what
// it signed before, and a key the server slips into the history is never trusted. The page's storage
// (IndexedDB), the server (fetch) and navigator are stood in for by support/browser.mjs.
import assert from "node:assert/strict";
import test from "node:test";

import { installBrowser } from "./support/browser.mjs";

const server = installBrowser();

const { base64url, fromBase64url } = await import("../../Sources/CountersignWebClient/web/js/bytes.js");
const { keyIdOf, registrationMessage, rotationMessage, signLowS, vouchMessage } = await import(
  "../../Sources/CountersignWebClient/web/js/device-keys.js"
);
const { T0, addDevice, at, deviceKeys, directory, iso, keyProof } = await import("./support/directories.mjs");
const pins = await import("../../Sources/CountersignWebClient/web/js/pins.js");
const { session } = await import("../../Sources/CountersignWebClient/web/js/session.js");
const { keyPair, text } = await import("./support/vectors.mjs");
const { parsePEM } = await import("../../Sources/CountersignWebClient/web/js/pem.js");

/** Serves `dir` as the server's answer for its user. */
const serve = (dir) => server.routes.set(`GET /v1/users/${dir.username}/devices`, structuredClone(dir));

// Bob reads and sends from this browser: his own device "b1".
const bobKeys = await deviceKeys();
const own = {
  username: "bob",
  deviceId: "b1",
  signingSpki: bobKeys.signing.spki,
  signingKeyId: bobKeys.signingId,
  encryptionKeyId: bobKeys.encryptionId,
  previous: [],
};
session.set({ token: "account-token", account: { id: "acc-bob", username: "bob" } });

const pinned = async (username) => (await pins.contacts()).find((p) => p.username === username);
const refusal = async (promise) => {
  try {
    await promise;
    return "accepted";
  } catch (error) {
    return error instanceof pins.PinError ? `PinError: ${error.message}` : `${error.name}: ${error.message}`;
  }
};

/** How many transactions on the pins `body` starts (support/browser.mjs's databases share one class). */
async function countingPinReads(body) {
  const request = indexedDB.open("countersign-probe");
  await new Promise((resolve) => queueMicrotask(() => queueMicrotask(resolve)));
  const proto = Object.getPrototypeOf(request.result);
  const begin = proto.transaction;
  let count = 0;
  proto.transaction = function (names, ...rest) {
    if ([names].flat().includes("pins")) count++;
    return begin.call(this, names, ...rest);
  };
  try {
    await body();
  } finally {
    proto.transaction = begin;
  }
  return count;
}

// Each test pins a user of its own, so the tests do not share pins.
let users = 0;
const freshUser = () => `alice${++users}`;

test("usernames follow the server's rule (MailboxTests.usernamesFollowTheServersRule)", () => {
  for (const good of ["bob", "a.b_c-d", "x23", "a".repeat(32)]) assert.equal(pins.isUsername(good), true, good);
  for (const bad of ["ab", "-bob", "bob.", "b\u212Ab", "bob\0", "a".repeat(33), "bo b", "Bob", 42, null]) {
    assert.equal(pins.isUsername(bad), false, JSON.stringify(bad));
  }
  assert.equal(pins.normalise("Bob"), "bob");
  // UsernameRule trims nothing: a name with spaces is refused, not cut.
  assert.equal(pins.normalise(" Bob "), null);
});

// UsernameRule.normalised refuses non-ASCII before it lower-cases ("the Kelvin sign lower-cases to k"), so
// "b\u212Ab" is refused rather than read as "bkb" (pins.js lower-cased first until the rules moved to rules.js).
test("a name with a non-ASCII letter that lower-cases to ASCII is refused, as UsernameRule.normalised does", async () => {
  assert.equal(pins.isUsername(pins.normalise("b\u212Ab")), false);
  assert.match(await refusal(pins.directory("b\u212Ab")), /is not a username/);
});

test("the devices to pin: key IDs computed here, this device checked against its own keys", async () => {
  const user = freshUser();
  const [k1, k2] = [await deviceKeys(), await deviceKeys()];
  const dir = await directory(user, "a2", [k2], [0]);
  addDevice(dir, await directory(user, "a1", [k1], [0]));
  dir.devices[0].signingKeyId = "00".repeat(16); // the server's own key ID fields are never read
  const devices = await pins.devicesOf(dir, own);
  assert.deepEqual(devices.map((d) => [d.id, d.signingKeyId, d.encryptionKeyId]), [
    ["a1", k1.signingId, k1.encryptionId],
    ["a2", k2.signingId, k2.encryptionId],
  ]);
  // A key that is not P-256 (a P-384 SPKI) is refused.
  const p384 = structuredClone(dir);
  p384.devices[0].signingKey = base64url(parsePEM(text("keys/p384.pub.pem")).der);
  assert.match(await refusal(pins.devicesOf(p384, own)), /^PinError: .* not a P-256 public key/);
  // Bob's own directory: this device is left out, and refused if listed with another key.
  const mine = await directory("bob", "b1", [bobKeys], [0]);
  addDevice(mine, await directory("bob", "b2", [k1], [0]));
  assert.deepEqual((await pins.devicesOf(mine, own)).map((d) => d.id), ["b2"]);
  assert.deepEqual(await pins.safetyKeys(mine, own), [own.signingSpki, k1.signing.spki]);
  const replaced = await directory("bob", "b1", [k2], [0]);
  const listedWithAnotherKey = await refusal(pins.devicesOf(replaced, own));
  assert.match(listedWithAnotherKey, /^PinError: REFUSED: the server lists this browser's device/);
  assert.deepEqual(await pins.safetyKeys(dir, own), [k1.signing.spki, k2.signing.spki]);
});

// KeyPinsTests.aRotationSignedByThePinnedKeyIsFollowedAndTheOldKeyVerifiesOnlyWhatItSignedBefore
test("rotations the pinned key signed are followed; a retired key verifies what it signed before", async () => {
  const user = freshUser();
  const [k1, k2, k3] = [await deviceKeys(), await deviceKeys(), await deviceKeys()];
  await pins.trust(await directory(user, "a1", [k1], [0]), own, at(0));
  const dir = await directory(user, "a1", [k1, k2, k3], [0, 100, 200]);
  serve(dir);
  const check = await pins.checkBeforeSending(user, own, at(300));
  assert.equal(check.firstContact, false);
  assert.deepEqual(check.devices.map((d) => d.signingKeyId), [k3.signingId]);
  const pin = await pinned(user);
  assert.deepEqual(pin.devices.map((d) => d.signingKeyId), [k3.signingId]);
  assert.deepEqual(pin.retired.map((r) => [r.signingKeyId, r.retiredAt]), [
    [k1.signingId, at(100)],
    [k2.signingId, at(200)],
  ]);
  // k1 verifies a message signed before it was retired (t0 + 100), not one signed after; offline too.
  server.offline = true;
  const before = await pins.signerKey(user, k1.signingId, at(50), own, at(400));
  assert.deepEqual(before.spki, k1.signing.spki);
  assert.match(await refusal(pins.signerKey(user, k1.signingId, at(150), own, at(400))), /which was retired before/);
  server.offline = false;
  const current = await pins.signerKey(user, k3.signingId, at(250), own, at(400));
  assert.deepEqual(current.spki, k3.signing.spki);
  assert.equal(current.firstContact, false);
});

// KeyPinsTests.aMessageSignedInTheSecondOfItsKeysRotationVerifiesThroughTheWire
test("a message signed 200 ms before its key was replaced, in the same second, verifies", async () => {
  const user = freshUser();
  const [k1, k2] = [await deviceKeys(), await deviceKeys()];
  await pins.trust(await directory(user, "a1", [k1], [0]), own, at(0));
  serve(await directory(user, "a1", [k1, k2], [0, 100.4]));
  await pins.checkBeforeSending(user, own, at(200));
  for (const offline of [false, true]) {
    server.offline = offline;
    const signer = await pins.signerKey(user, k1.signingId, at(100.2), own, at(300));
    assert.deepEqual(signer.spki, k1.signing.spki, `offline: ${offline}`);
    assert.match(await refusal(pins.signerKey(user, k1.signingId, at(100.6), own, at(300))), /retired/);
  }
  server.offline = false;
});

// KeyPinsTests.aRotationTheServerForgedIsNotFollowed
test("a rotation the server forged, flipped or re-keyed is not followed", async () => {
  const user = freshUser();
  const [k1, k2, forger] = [await deviceKeys(), await deviceKeys(), await deviceKeys()];
  await pins.trust(await directory(user, "a1", [k1], [0]), own, at(0));
  const forged = await directory(user, "a1", [k1, k2], [0, 100], { forged: 1, forger });
  serve(forged);
  assert.match(await refusal(pins.checkBeforeSending(user, own, at(200))), /changed since you pinned them/);
  // A message signed by the forged key: the directory lists it, so it is named as from the user's unverified
  // device (never as from the user); offline, a key nobody pinned (KeyPinsTests, the same test).
  await assert.rejects(pins.signerKey(user, k2.signingId, at(150), own, at(200)), (e) => {
    assert.ok(e instanceof pins.UnverifiedDevice);
    assert.deepEqual([e.device.id, e.device.signingKeyId, e.signer.unverified.id], ["a1", k2.signingId, "a1"]);
    assert.deepEqual(e.spki, k2.signing.spki);
    return true;
  });
  server.offline = true;
  assert.match(
    await refusal(pins.signerKey(user, k2.signingId, at(150), own, at(200))),
    new RegExp(`signed by key ${k2.signingId.slice(0, 8)}.*not a key you pinned`),
  );
  server.offline = false;
  // A bit flipped in a real rotation signature.
  const flipped = await directory(user, "a1", [k1, k2], [0, 100]);
  const signature = fromBase64url(flipped.history[1].rotationSignature);
  signature[10] ^= 1;
  flipped.history[1].rotationSignature = base64url(signature);
  assert.ok((await pins.pinState(flipped, own, at(200))).changes.length > 0, "a flipped signature is not followed");
  // A new encryption key the signature does not cover.
  const swapped = await directory(user, "a1", [k1, k2], [0, 100]);
  const other = await deviceKeys();
  swapped.devices[0].encryptionKey = base64url(other.encryption.spki);
  swapped.history[1].encryptionKey = base64url(other.encryption.spki);
  await assert.rejects(pins.pinState(swapped, own, at(200)), /never signed/, "a swapped encryption key is refused");
  assert.deepEqual((await pinned(user)).devices.map((d) => d.signingKeyId), [k1.signingId]);
});

// KeyPinsTests.aRetirementIsNeverLaterThanWhenItWasSeen
test("a retirement is never later than when this browser saw it", async () => {
  const user = freshUser();
  const [k1, k2] = [await deviceKeys(), await deviceKeys()];
  await pins.trust(await directory(user, "a1", [k1], [0]), own, at(0));
  const late = await directory(user, "a1", [k1, k2], [0, 100]);
  late.history[0].retiredAt = iso(at(1_000_000));
  late.history[1].addedAt = iso(at(1_000_000));
  const state = await pins.pinState(late, own, at(200));
  assert.deepEqual(state.changes, []);
  assert.deepEqual((await pinned(user)).retired.map((r) => r.retiredAt), [at(200)]);
});

// KeyPinsTests.rotationChain: retiredAt = min(old entry's retiredAt, the successor's addedAt, now).
test("a rotated key is retired at the directory's retirement time when that is the earliest", async () => {
  const user = freshUser();
  const [k1, k2] = [await deviceKeys(), await deviceKeys()];
  await pins.trust(await directory(user, "a1", [k1], [0]), own, at(0));
  const dir = await directory(user, "a1", [k1, k2], [0, 100]);
  dir.history[0].retiredAt = iso(at(50)); // retired (say, reported lost) before its successor arrived
  await pins.pinState(dir, own, at(200));
  assert.deepEqual((await pinned(user)).retired.map((r) => r.retiredAt), [at(50)]);
});

// KeyPinsTests.aForkedRotationIsNotFollowed
test("a pinned key that signed two successors is followed to neither; the same rotation alone is", async () => {
  const user = freshUser();
  const [k1, k2, k3] = [await deviceKeys(), await deviceKeys(), await deviceKeys()];
  await pins.trust(await directory(user, "a1", [k1], [0]), own, at(0));
  const forked = await directory(user, "a1", [k1, k3], [0, 200]);
  forked.history.splice(1, 0, (await directory(user, "a1", [k1, k2], [0, 100])).history[1]);
  assert.ok((await pins.pinState(forked, own, at(300))).changes.length > 0);
  assert.deepEqual((await pinned(user)).devices.map((d) => d.signingKeyId), [k1.signingId]);
  const alone = await pins.pinState(await directory(user, "a1", [k1, k3], [0, 200]), own, at(300));
  assert.deepEqual(alone.changes, []);
  assert.deepEqual((await pinned(user)).devices.map((d) => d.signingKeyId), [k3.signingId]);
});

// KeyPinsTests.aKeyThatIsNotPinnedIsRefusedEvenWhenTheServerListsItInTheHistory
test("a key the server slips into the history is refused; offline only the pins count", async () => {
  const user = freshUser();
  const [k1, mallory] = [await deviceKeys(), await deviceKeys()];
  serve(await directory(user, "a1", [k1], [0]));
  const first = await pins.signerKey(user, k1.signingId, at(0), own, at(0));
  assert.equal(first.firstContact, true);
  assert.deepEqual(first.spki, k1.signing.spki);
  assert.equal(await pinned(user), undefined, "a first contact is pinned only by commit()");
  await first.commit();
  assert.deepEqual((await pinned(user)).devices.map((d) => d.signingKeyId), [k1.signingId]);
  const lying = await directory(user, "a1", [k1], [0]);
  lying.history.unshift({
    deviceId: "a1",
    signingKeyId: mallory.signingId,
    encryptionKeyId: mallory.encryptionId,
    signingKey: base64url(mallory.signing.spki),
    addedAt: iso(at(-100)),
    retiredAt: iso(at(10_000)),
  });
  serve(lying);
  const unpinned = new RegExp(`not a key you pinned for ${user} \\(pinned: ${k1.signingId.slice(0, 8)}`);
  assert.match(await refusal(pins.signerKey(user, mallory.signingId, at(5), own, at(20))), unpinned);
  server.offline = true;
  assert.match(await refusal(pins.signerKey(user, mallory.signingId, at(5), own, at(20))), unpinned);
  assert.equal((await pins.signerKey(user, k1.signingId, at(5), own, at(20))).firstContact, false);
  assert.match(await refusal(pins.signerKey("carol", k1.signingId, at(0), own, at(0))), /Nothing is pinned for carol/);
  server.offline = false;
});

test("a first contact before sending is pinned only once the message is sent (commit)", async () => {
  const user = freshUser();
  const k1 = await deviceKeys();
  serve(await directory(user, "a1", [k1], [0]));
  const check = await pins.checkBeforeSending(user, own, at(0));
  assert.equal(check.firstContact, true);
  assert.equal(await pinned(user), undefined);
  await check.commit();
  assert.equal((await pinned(user)).firstSeen, at(0));
  // Another device added since: sending is refused until the user trusts.
  const k2 = await deviceKeys();
  const grown = await directory(user, "a1", [k1], [0]);
  addDevice(grown, await directory(user, "a2", [k2], [0]));
  serve(grown);
  await assert.rejects(pins.checkBeforeSending(user, own, at(10)), (e) => {
    assert.ok(e instanceof pins.PinError);
    assert.deepEqual(e.changes, [`added device laptop (${k2.signingId.match(/.{8}/g).join(":")})`]);
    return true;
  });
  await pins.trust(grown, own, at(20));
  assert.equal((await pins.checkBeforeSending(user, own, at(30))).firstContact, false);
});

test("the directory must be the one asked for, and at most 10 devices", async () => {
  const k1 = await deviceKeys();
  server.routes.set("GET /v1/users/dave/devices", await directory("eve", "e1", [k1], [0]));
  assert.match(await refusal(pins.directory("dave")), /another user's keys/);
  const many = await directory("dave", "d0", [k1], [0]);
  for (let i = 1; i <= 10; i++) many.devices.push({ ...many.devices[0], id: `d${i}` });
  serve(many);
  assert.match(await refusal(pins.directory("Dave")), /more than 10 devices/);
  assert.match(await refusal(pins.directory("not a name")), /is not a username/);
  assert.match(await refusal(pins.directory("nobody")), /There is no user nobody/);
});

/** A device pinned at k1 that rotated once to k2, in a directory whose history for it holds `entries`
 *  signed entries: the real rotation and other keys' entries whose signatures do not verify. */
async function rotationAmong(entries) {
  const user = freshUser();
  const [k1, k2] = [await deviceKeys(), await deviceKeys()];
  await pins.trust(await directory(user, "a1", [k1], [0]), own, at(0));
  const dir = await directory(user, "a1", [k1, k2], [0, 100]);
  const others = [await deviceKeys(), await deviceKeys()];
  for (let i = 1; i < entries; i++) {
    const k = others[i % 2];
    dir.history.push({
      ...dir.history[1],
      signingKeyId: k.signingId,
      signingKey: base64url(k.signing.spki),
      rotationSignature: base64url(new Uint8Array(64).fill(i)),
    });
  }
  return { user, k2, dir };
}

test("a rotation is followed in a history of 100 signed entries", async () => {
  const { user, k2, dir } = await rotationAmong(100);
  assert.deepEqual((await pins.pinState(dir, own, at(200))).changes, []);
  assert.deepEqual((await pinned(user)).devices.map((d) => d.signingKeyId), [k2.signingId]);
});

// KeyPins.maxHistory is 1,000 (a device's whole history, signed or not); pins.js followed at most 100.
test("a rotation is followed in a history of 101 entries, as KeyPins.maxHistory (1,000) allows", async () => {
  const { user, k2, dir } = await rotationAmong(101);
  assert.deepEqual((await pins.pinState(dir, own, at(200))).changes, []);
  assert.deepEqual((await pinned(user)).devices.map((d) => d.signingKeyId), [k2.signingId]);
});

// ---- Linked devices (KeyPins.followLinks, followRemovals, setVerified; the cases both share are in
// pins-vectors.test.mjs): what the vectors do not reach.

/** A history entry of device `id` with keys `k`, vouched for by `voucher` (id and keys) at `seconds`. */
async function vouched(user, id, k, voucher, seconds, { encryption = k } = {}) {
  const vouchedAt = Math.floor(at(seconds) / 1000);
  const message = await vouchMessage({
    username: user,
    voucherDeviceId: voucher.id,
    voucherSigningSpki: voucher.keys.signing.spki,
    deviceId: id,
    signingSpki: k.signing.spki,
    encryptionSpki: encryption.encryption.spki,
    vouchedAt,
  });
  const entry = (await directory(user, id, [k], [seconds])).history[0];
  entry.encryptionKey = base64url(encryption.encryption.spki);
  const signature = base64url(await signLowS(voucher.keys.signing.privateKey, message));
  return { ...entry, vouch: { deviceId: voucher.id, vouchedAt, signature } };
}

test("a chain of links is followed whatever order the directory lists the devices in", async () => {
  const user = freshUser();
  const [k1, k2, k3] = [await deviceKeys(), await deviceKeys(), await deviceKeys()];
  const first = await directory(user, "a1", [k1], [0]);
  await pins.trust(first, own, at(0));
  const dir = structuredClone(first);
  // a3 (vouched by a2) is listed before a2 (vouched by a1): a second look at the list follows it.
  dir.devices.unshift((await directory(user, "a3", [k3], [0])).devices[0]);
  addDevice(dir, await directory(user, "a2", [k2], [0]));
  dir.history.push(await vouched(user, "a3", k3, { id: "a2", keys: k2 }, 20));
  dir.history.push(await vouched(user, "a2", k2, { id: "a1", keys: k1 }, 10));
  const state = await pins.pinState(dir, own, at(100));
  assert.deepEqual(state.changes, []);
  assert.deepEqual(state.followed.links.map((l) => [l.device.id, l.byName]), [["a2", "laptop"], ["a3", "laptop"]]);
  const pin = await pinned(user);
  assert.deepEqual(pin.devices.map((d) => d.id), ["a1", "a2", "a3"]);
  assert.equal(pin.changedAt, at(100));
  assert.deepEqual(pins.unseenNotices(pin).map((n) => [n.kind, n.deviceId]), [["linked", "a2"], ["linked", "a3"]]);
  const words = pins.noticeWords(user, pins.unseenNotices(pin)[0]);
  assert.equal(words, `${user} linked a new device, “laptop”, approved by “laptop”.`);
  await pins.markNoticesSeen(user, at(200));
  assert.deepEqual(pins.unseenNotices(await pinned(user)), []);
});

test("a vouch whose encryption key is not the one listed is not followed", async () => {
  const user = freshUser();
  const [k1, k2, other] = [await deviceKeys(), await deviceKeys(), await deviceKeys()];
  const first = await directory(user, "a1", [k1], [0]);
  await pins.trust(first, own, at(0));
  const dir = structuredClone(first);
  addDevice(dir, await directory(user, "a2", [k2], [0]));
  // A real vouch, by the pinned device, over k2 and another encryption key than a2 is listed with.
  dir.history.push(await vouched(user, "a2", k2, { id: "a1", keys: k1 }, 10, { encryption: other }));
  const state = await pins.pinState(dir, own, at(100));
  assert.equal(state.changes.length, 1);
  assert.deepEqual((await pinned(user)).devices.map((d) => d.id), ["a1"]);
});

test("marked verified, nothing is followed; trusting anew is not verifying; a removal is followed", async () => {
  const user = freshUser();
  const [k1, k2] = [await deviceKeys(), await deviceKeys()];
  const first = await directory(user, "a1", [k1], [0]);
  assert.equal(await pins.setVerified(user, true, at(1)), false, "nothing pinned: nothing to mark");
  await pins.trust(first, own, at(0));
  assert.equal(await pins.setVerified(user, true, at(1)), true);
  const dir = structuredClone(first);
  addDevice(dir, await directory(user, "a2", [k2], [0]));
  dir.history.push(await vouched(user, "a2", k2, { id: "a1", keys: k1 }, 10));
  serve(dir);
  await assert.rejects(pins.checkBeforeSending(user, own, at(100)), /You marked .* verified/);
  assert.equal((await pinned(user)).verifiedAt, at(1));
  await pins.trust(dir, own, at(150));
  let pin = await pinned(user);
  assert.deepEqual([pin.verifiedAt, pin.changedAt], [null, at(150)]);
  // The device removed: followed, retired when the directory says (never later than now), a notice kept.
  const removed = structuredClone(dir);
  removed.devices = removed.devices.filter((d) => d.id !== "a2");
  removed.history.find((h) => h.deviceId === "a2").retiredAt = iso(at(180));
  serve(removed);
  const check = await pins.checkBeforeSending(user, own, at(200));
  assert.deepEqual(check.followed.removals.map((d) => d.id), ["a2"]);
  pin = await pinned(user);
  assert.deepEqual(pin.retired.map((r) => [r.deviceId, r.retiredAt]), [["a2", at(180)]]);
  assert.equal(pin.changedAt, at(200));
  assert.equal(pins.noticeWords(user, pins.unseenNotices(pin).at(-1)), `${user}'s device “laptop” was removed.`);
  // A message a2 signed before its removal still verifies; one signed after is refused as retired.
  assert.deepEqual((await pins.signerKey(user, k2.signingId, at(170), own, at(300))).spki, k2.signing.spki);
  await assert.rejects(pins.signerKey(user, k2.signingId, at(190), own, at(300)), (e) => e.reason === "retired");
});

test("this browser's own device is never an unverified device of its own account", async () => {
  const k2 = await deviceKeys();
  const mine = await directory("bob", "b1", [bobKeys], [0]);
  addDevice(mine, await directory("bob", "b2", [k2], [0]));
  serve(mine);
  // b2 unpinned and unvouched: a message from it is from bob's unverified device; this device's own key is its own.
  await pins.trust(await directory("bob", "b1", [bobKeys], [0]), own, at(0));
  await assert.rejects(pins.signerKey("bob", k2.signingId, at(5), own, at(10)), pins.UnverifiedDevice);
  assert.deepEqual((await pins.signerKey("bob", bobKeys.signingId, at(5), own, at(10))).spki, bobKeys.signing.spki);
});

test("Mark as verified covers only the devices whose safety number was shown", async () => {
  const user = freshUser();
  const [k1, k2] = [await deviceKeys(), await deviceKeys()];
  const first = await directory(user, "a1", [k1], [0]);
  await pins.trust(first, own, at(0));
  const shown = (await pinned(user)).devices;
  // Meanwhile (another tab, a message opening) the pins took a second device.
  const dir = structuredClone(first);
  addDevice(dir, await directory(user, "a2", [k2], [0]));
  await pins.trust(dir, own, at(10));
  await assert.rejects(pins.setVerified(user, true, at(20), { compared: shown }), /changed since this safety number/);
  assert.equal((await pinned(user)).verifiedAt, null);
  assert.equal(await pins.setVerified(user, true, at(30), { compared: (await pinned(user)).devices }), true);
  assert.equal((await pinned(user)).verifiedAt, at(30));
});

// KeyPinsTests.anEncryptionKeyTheSigningKeyNeverChoseIsRefused
test("an encryption key the device's signing key never chose is refused, whatever the proof says", async () => {
  const user = freshUser();
  const [k1, k2, server] = [await deviceKeys(), await deviceKeys(), await deviceKeys()];
  const listed = (dir) => pins.devicesOf(dir, own);
  assert.deepEqual((await listed(await directory(user, "a1", [k1], [0]))).map((d) => d.encryptionKeyId), [
    k1.encryptionId,
  ]);
  assert.deepEqual((await listed(await directory(user, "a1", [k1, k2], [0, 60]))).map((d) => d.encryptionKeyId), [
    k2.encryptionId,
  ]);
  const refused = async (dir, why) => assert.rejects(listed(dir), /never signed/, why);
  const swapped = await directory(user, "a1", [k1], [0]);
  swapped.devices[0].encryptionKey = base64url(server.encryption.spki);
  swapped.history[0].encryptionKey = base64url(server.encryption.spki);
  await refused(swapped, "the encryption key swapped, the proof kept");
  const variants = [
    ["no proof", (p) => null],
    ["signed by another key", async (p, dir) => keyProof("a1", [k1], 0, server)],
    ["a bit flipped", (p) => ({ ...p, signature: base64url(flip(fromBase64url(p.signature))) })],
    ["truncated", (p) => ({ ...p, signature: base64url(fromBase64url(p.signature).subarray(0, 63)) })],
    ["another account", (p) => ({ ...p, accountId: "another" })],
    ["an unknown statement", (p) => ({ ...p, statement: "vouch" })],
  ];
  for (const [why, change] of variants) {
    const dir = await directory(user, "a1", [k1], [0]);
    dir.history[0].keyProof = await change(dir.history[0].keyProof, dir);
    await refused(dir, why);
  }
  const oldKeySigned = await directory(user, "a1", [k1, k2], [0, 60]);
  oldKeySigned.history[1].keyProof = await keyProof("a1", [k1, k2], 1, k1);
  await refused(oldKeySigned, "a rotation's proof by the key it replaced");
});

function flip(bytes) {
  const out = new Uint8Array(bytes);
  out[5] ^= 1;
  return out;
}

test("in a batch a sender's directory is followed once, and every message is still held to the pins", async () => {
  const user = freshUser();
  const [k1, k2, stranger] = [await deviceKeys(), await deviceKeys(), await deviceKeys()];
  await pins.trust(await directory(user, "a1", [k1], [0]), own, at(0));
  serve(await directory(user, "a1", [k1, k2], [0, 100]));
  const directories = new Map();
  const batch = (key, signed) => pins.signerKey(user, key.signingId, at(signed), own, at(300), { directories });
  const first = await batch(k2, 200);
  assert.deepEqual(first.spki, k2.signing.spki);
  assert.deepEqual(first.followed.rotations.map((r) => r.deviceId), ["a1"], "followed with the first message");
  const second = await batch(k2, 250);
  assert.deepEqual(second.spki, k2.signing.spki);
  assert.equal(second.followed.rotations.length, 0, "not followed again");
  assert.deepEqual((await batch(k1, 50)).spki, k1.signing.spki, "the retired key, for what it signed before");
  assert.match(await refusal(batch(k1, 150)), /which was retired before/);
  assert.match(await refusal(batch(stranger, 250)), /not a key you pinned|not pinned|is not one/);
  assert.equal(server.calls.filter((c) => c === `GET /v1/users/${user}/devices`).length, 1, "asked once");
  // Nor are the pins read again: a batch's later messages start no transaction on them.
  const reads = await countingPinReads(async () => {
    assert.deepEqual((await batch(k2, 260)).spki, k2.signing.spki);
    assert.match(await refusal(batch(k1, 150)), /which was retired before/, "still held to the pins read once");
  });
  assert.equal(reads, 0, "the pins read once in the batch");
  // A long opening reads them again when told to (another tab may have trusted or followed meanwhile).
  pins.rereadPins(directories);
  assert.ok((await countingPinReads(() => batch(k2, 270))) > 0, "read again after rereadPins");
  assert.ok((await countingPinReads(() => pins.signerKey(user, k2.signingId, at(260), own, at(300)))) > 0);

  // A first contact's devices (their key proofs checked) are worked out once per batch, not per message.
  const other = freshUser();
  const [e1, e2] = [await deviceKeys(), await deviceKeys()];
  const listed = await directory(other, "b1", [e1], [0]);
  addDevice(listed, await directory(other, "b2", [e2], [0]));
  serve(listed);
  const verify = crypto.subtle.verify.bind(crypto.subtle);
  let verified = 0;
  crypto.subtle.verify = (...args) => ((verified += 1), verify(...args));
  try {
    const lookups = new Map();
    const look = () => pins.signerKey(other, e1.signingId, at(200), own, at(300), { directories: lookups });
    assert.equal((await look()).firstContact, true);
    const first = verified;
    assert.ok(first >= 2, `the two devices' proofs were checked (${first})`);
    assert.equal((await look()).firstContact, true, "nothing committed: still a first contact");
    assert.equal(verified, first, "not checked again within the batch");
    await pins.signerKey(other, e1.signingId, at(200), own, at(300));
    assert.ok(verified > first, "outside a batch, checked again");
  } finally {
    crypto.subtle.verify = verify;
  }
});

// Approvers (PROTOCOL §1.2) as the SDK decodes them: one malformed entry refuses the whole answer there
// (UserDirectory fails to decode), so pins.js refuses it too rather than reading around it.
test("a directory whose approvers are malformed is refused, as the SDK refuses it", async () => {
  const user = freshUser();
  const dir = await directory(user, "a1", [await deviceKeys()], [0]);
  const good = {
    id: "p1", name: "Phone", signingKey: "AAAA", signingKeyId: "00", createdAt: "2027-01-15T08:00:00Z",
    endorsement: { deviceId: "a1", endorsedAt: 1_800_000_000, signature: "AAAA" },
  };
  serve({ ...dir, approvers: [good] });
  assert.equal((await pins.directory(user)).approvers.length, 1);
  for (const approvers of [{}, [null], [{ ...good, endorsement: null }], [{ ...good, id: 7 }],
    [{ ...good, endorsement: { ...good.endorsement, endorsedAt: "soon" } }]]) {
    serve({ ...dir, approvers });
    assert.match(await refusal(pins.directory(user)), /not one this page accepts/, JSON.stringify(approvers));
  }
});
