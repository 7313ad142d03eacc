// A message's opened copy: what opening its envelope found (the text, the signer key ID, when it was verified),
// kept beside the envelope under AES-256-GCM so that showing it again costs one decryption, not a signature
// check and an HPKE open (docs/WEB.md, "Opened copies"). The key is derived from this device's encryption key
// pair by ECDH with its own public key (HKDF over x(d·d·G)), once the stored public key is shown to be the
// private key's (x(d·G) is its x): only a page that can use that private key (the key gate unlocked) can read
// or write a copy, and a copy for a key pair that was replaced is simply not used. A copy is bound to the
// account, the message and the envelope's bytes (SHA-256), so every header field shown beside it is the one
// that was verified. The signer is still looked up in the pins each time: a copy remembers that the signature
// held, not whom to trust.
import { base64url, concat, fromBase64url, lv, utf8 } from "./bytes.js";

const INFO = utf8("countersign/v1 opened message copy");
// P-256's base point G, uncompressed (SEC 2 §2.4.2).
const G = Uint8Array.from(
  ("046b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296" +
    "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5").match(/../g),
  (b) => parseInt(b, 16),
);
const keys = new WeakMap(); // private key → { point, key: Promise<AES-GCM CryptoKey> } for that public point

const ecdh = async (privateKey, point) => {
  const publicKey = await crypto.subtle.importKey("raw", point, { name: "ECDH", namedCurve: "P-256" }, false, []);
  return new Uint8Array(await crypto.subtle.deriveBits({ name: "ECDH", public: publicKey }, privateKey, 256));
};

/** The copies' AES key for an encryption key pair (`privateKey`, and `point`, its public key's raw point):
 *  the same for every message, derived once per key object. Refused when `point` is not the private key's
 *  (a stored public key swapped for one whose square anyone could compute, such as G). */
export function copyKey(pair) {
  const known = keys.get(pair.privateKey);
  if (known && known.point.every((b, i) => b === pair.point[i])) return known.key;
  const key = (async () => {
    const own = await ecdh(pair.privateKey, G);
    if (!own.every((b, i) => b === pair.point[1 + i]))
      throw new Error("This browser's stored encryption key does not belong to its private key.");
    const secret = await ecdh(pair.privateKey, pair.point);
    const ikm = await crypto.subtle.importKey("raw", secret, "HKDF", false, ["deriveKey"]);
    return crypto.subtle.deriveKey(
      { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(32), info: INFO },
      ikm,
      { name: "AES-GCM", length: 256 },
      false,
      ["encrypt", "decrypt"],
    );
  })();
  keys.set(pair.privateKey, { point: Uint8Array.from(pair.point), key });
  return key;
}

/** What a copy is bound to: the account, the message and its envelope (`envelopeHash`, SHA-256 of its bytes),
 *  so it cannot be moved to another message or kept beside another envelope. */
const boundTo = (accountId, messageId, envelopeHash) =>
  concat(lv(utf8(String(accountId))), lv(utf8(String(messageId))), lv(envelopeHash));

/**
 * A copy of `content` ({ text, signerKeyId, verifiedAt }) for message `messageId` of `accountId` whose
 * envelope's SHA-256 is `envelopeHash`, under the key pair `pair` whose key ID is `keyId` (hex). `random(n)`
 * gives the IV's bytes (a parameter for tests).
 */
export async function makeCopy({ accountId, messageId, envelopeHash, content, pair, keyId, random = randomBytes }) {
  const iv = random(12);
  const ct = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: boundTo(accountId, messageId, envelopeHash) },
    await copyKey(pair),
    utf8(JSON.stringify(content)),
  );
  return { v: 1, keyId, iv: base64url(iv), ct: base64url(new Uint8Array(ct)) };
}

/**
 * The content of `copy`, or null when it is for another key pair than `pair` (key ID `keyId`) or not a copy
 * this code wrote. Throws when it does not open: it was altered, or moved from another message or envelope.
 */
export async function readCopy(copy, { accountId, messageId, envelopeHash, pair, keyId }) {
  if (copy?.v !== 1 || copy.keyId !== keyId || typeof copy.iv !== "string" || typeof copy.ct !== "string")
    return null;
  const key = await copyKey(pair);
  let plain;
  try {
    plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: fromBase64url(copy.iv), additionalData: boundTo(accountId, messageId, envelopeHash) },
      key,
      fromBase64url(copy.ct),
    );
  } catch {
    throw new Error("Its opened copy in this browser was altered or belongs to another message.");
  }
  return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(plain));
}

const randomBytes = (n) => crypto.getRandomValues(new Uint8Array(n));
