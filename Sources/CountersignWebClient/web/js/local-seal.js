// A message's local copy, re-sealed in this browser when its keys are replaced and the old ones deleted
// (turning the key gate on, SPEC §14.4): the text and what was verified when it was opened under the old
// keys (sender, signer key ID, signed time, when it was verified), sealed by HPKE to this device's new
// encryption key and signed by its new signing key. The signature keeps anyone who can write the browser's
// storage, but cannot use its keys, from planting a "verified" text: HPKE alone seals to a public key.
// It never leaves the browser; the server's envelope stays beside it, as the server sent it.
import { base64url, concat, fromBase64url, hex, lv, sha256, utf8 } from "./bytes.js";
import { signLowS, spki, verifyLowS } from "./device-keys.js";
import * as hpke from "./hpke.js";

const INFO = utf8("countersign/v1 local message copy");
const SIGNATURE_CONTEXT = concat(utf8("countersign/v1 local message copy signature"), new Uint8Array([0]));

export const keyIdHex = async (publicKey) => hex((await sha256(await spki(publicKey))).subarray(0, 16));

/** What the copy is bound to: the account and the message, so it cannot be moved to another message. */
const boundTo = (accountId, messageId) => concat(lv(utf8(String(accountId))), lv(utf8(String(messageId))));

async function signed(copy, aad) {
  // The ciphertext (up to the 1 MiB text and more) by its hash: a length-value field holds 64 KiB at most.
  const ct = await sha256(fromBase64url(copy.ct));
  const parts = [utf8(copy.keyId), utf8(copy.signer), fromBase64url(copy.enc), ct].map(lv);
  return concat(SIGNATURE_CONTEXT, await sha256(concat(...parts, aad)));
}

/**
 * Seals `content` ({ text, sender, signerKeyId, signedAt, verifiedAt }) for message `messageId` of
 * `accountId` to `encryption` (a key pair: only its public key is used) and signs it with `signing`.
 */
export async function sealCopy({ accountId, messageId, content, encryption, signing }) {
  const aad = boundTo(accountId, messageId);
  const point = await hpke.rawPoint(encryption.publicKey);
  const { enc, ciphertext } = await hpke.seal(point, INFO, aad, utf8(JSON.stringify(content)));
  const copy = {
    v: 1,
    keyId: await keyIdHex(encryption.publicKey),
    signer: await keyIdHex(signing.publicKey),
    enc: base64url(enc),
    ct: base64url(ciphertext),
  };
  copy.sig = base64url(await signLowS(signing.privateKey, await signed(copy, aad)));
  return copy;
}

/**
 * Opens a copy with this device's key pairs (`pairs`: [{ signing, encryption }], current first, then
 * retired). Null when none of them is the one it was sealed to (a rotation refused after it was made);
 * throws when its signature is not by one of this device's signing keys or it does not open.
 */
export async function openCopy(copy, { accountId, messageId, pairs }) {
  let encryption = null;
  let signer = null;
  for (const pair of pairs) {
    if (!encryption && pair.encryption?.privateKey && (await keyIdHex(pair.encryption.publicKey)) === copy.keyId)
      encryption = pair.encryption;
    if (!signer && pair.signing && (await keyIdHex(pair.signing.publicKey)) === copy.signer) signer = pair.signing;
  }
  if (!encryption) return null;
  if (!signer) throw new Error("Its local copy is signed by a key this browser never had.");
  const aad = boundTo(accountId, messageId);
  if (!(await verifyLowS(await spki(signer.publicKey), await signed(copy, aad), fromBase64url(copy.sig))))
    throw new Error("Its local copy was altered: its signature does not verify.");
  const plain = await hpke.open(
    encryption.privateKey,
    await hpke.rawPoint(encryption.publicKey),
    fromBase64url(copy.enc),
    INFO,
    aad,
    fromBase64url(copy.ct),
  );
  return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(plain));
}
