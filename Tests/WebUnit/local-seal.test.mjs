// local-seal.js: a message's copy re-sealed to this device's new keys before the old ones are deleted (the
// key gate turned on). It opens with the pair it was sealed to and says what was verified; it is refused when
// altered, moved to another message or account, or signed by a key this device never had; a copy sealed to
// keys the device does not hold (a rotation refused after it was made) is not opened (null).
import assert from "node:assert/strict";
import test from "node:test";

import { makeDeviceKeys } from "../../Sources/CountersignWebClient/web/js/device-keys.js";
import { openCopy, sealCopy } from "../../Sources/CountersignWebClient/web/js/local-seal.js";
import { base64url, fromBase64url } from "../../Sources/CountersignWebClient/web/js/bytes.js";

const content = {
  text: "sealed to the old key ✓\nsecond line",
  sender: "bob",
  signerKeyId: "8c4e0aa61d9aee16c3af16df524b4e93",
  signedAt: 1_795_000_000_000,
  verifiedAt: 1_795_000_100_000,
};
const at = { accountId: "acct-1", messageId: "4b450525fe0857227c68cd5cd430b158" };

async function sealed(pair) {
  return sealCopy({ ...at, content, ...pair });
}

test("a copy opens with the pair it was sealed to, retired or current, and says what was verified", async () => {
  const older = await makeDeviceKeys();
  const newer = await makeDeviceKeys(true);
  const copy = await sealed(newer);
  assert.deepEqual(await openCopy(copy, { ...at, pairs: [newer, older] }), content);
  assert.deepEqual(await openCopy(copy, { ...at, pairs: [await makeDeviceKeys(), newer] }), content, "retired since");
  assert.equal(JSON.stringify(copy).includes("sealed to the old key"), false, "only ciphertext is kept");
});

test("a copy for keys this device does not hold is not opened", async () => {
  const copy = await sealed(await makeDeviceKeys());
  assert.equal(await openCopy(copy, { ...at, pairs: [await makeDeviceKeys()] }), null);
});

test("an altered copy, or one moved to another message or account, is refused", async () => {
  const pair = await makeDeviceKeys();
  const copy = await sealed(pair);
  const pairs = [pair];
  const flipped = (field) => {
    const bytes = fromBase64url(copy[field]);
    bytes[bytes.length - 1] ^= 1;
    return { ...copy, [field]: base64url(bytes) };
  };
  for (const field of ["ct", "enc", "sig"]) {
    await assert.rejects(openCopy(flipped(field), { ...at, pairs }), field);
  }
  await assert.rejects(openCopy(copy, { ...at, messageId: "0".repeat(32), pairs }), /signature/);
  await assert.rejects(openCopy(copy, { ...at, accountId: "acct-2", pairs }), /signature/);
});

test("a copy sealed to this device's key but signed by another key is refused", async () => {
  const pair = await makeDeviceKeys();
  const stranger = await makeDeviceKeys();
  // Anyone may seal to a public key: the signature is what says this device made the copy.
  const planted = await sealCopy({ ...at, content, encryption: pair.encryption, signing: stranger.signing });
  await assert.rejects(openCopy(planted, { ...at, pairs: [pair] }), /never had/);
  const relabelled = { ...planted, signer: (await sealed(pair)).signer };
  await assert.rejects(openCopy(relabelled, { ...at, pairs: [pair] }), /signature/);
});
