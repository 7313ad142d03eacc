// A message's opened copy: what opening its envelope found (the text, the signer key ID, when it was verified),
// kept beside the envelope under AES-256-GCM so that showing it again costs one decryption, not a signature
// check and an HPKE open (docs/WEB.md, "Opened copies"). The key is derived from this device's encryption key
// pair by ECDH with its own public key (HKDF over x(d·d·G)): only a page that can use that private key (the key
// gate unlocked) can read or write a copy, and a copy for a key pair that was replaced is simply not used.
// The signer is still looked up in the pins each time: a copy remembers that the signature held, not whom
// to trust.
import { base64url, concat, fromBase64url, lv, utf8 } from "./bytes.js";

const INFO = utf8("countersign/v1 opened message copy");
const keys = new WeakMap(); // private key → Promise<AES-GCM CryptoKey>

/** The copies' AES key for an encryption key pair (`privateKey`, and `point`, its public key's raw point):
 *  the same for every message, derived once per key object. */
export function copyKey(pair) {
  if (!keys.has(pair.privateKey)) {
    keys.set(pair.privateKey, (async () => {
      const own = await crypto.subtle.importKey(
        "raw",
        pair.point,
        { name: "ECDH", namedCurve: "P-256" },
        false,
        [],
      );
      const secret = await crypto.subtle.deriveBits({ name: "ECDH", public: own }, pair.privateKey, 256);
      const ikm = await crypto.subtle.importKey("raw", secret, "HKDF", false, ["deriveKey"]);
      return crypto.subtle.deriveKey(
        { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(32), info: INFO },
        ikm,
        { name: "AES-GCM", length: 256 },
        false,
        ["encrypt", "decrypt"],
      );
    })());
  }
  return keys.get(pair.privateKey);
}

/** What a copy is bound to: the account and the message, so it cannot be moved to another message. */
const boundTo = (accountId, messageId) => concat(lv(utf8(String(accountId))), lv(utf8(String(messageId))));

/**
 * A copy of `content` ({ text, sender, signerKeyId, signedAt, verifiedAt, unverified? }) for message
 * `messageId` of `accountId`, under the key pair `pair` whose key ID is `keyId` (hex). `random(n)` gives the
 * IV's bytes (a parameter for tests).
 */
export async function makeCopy({ accountId, messageId, content, pair, keyId, random = randomBytes }) {
  const iv = random(12);
  const ct = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: boundTo(accountId, messageId) },
    await copyKey(pair),
    utf8(JSON.stringify(content)),
  );
  return { v: 1, keyId, iv: base64url(iv), ct: base64url(new Uint8Array(ct)) };
}

/**
 * The content of `copy`, or null when it is for another key pair than `pair` (key ID `keyId`) or not a copy
 * this code wrote. Throws when it does not open: it was altered, or moved from another message.
 */
export async function readCopy(copy, { accountId, messageId, pair, keyId }) {
  if (copy?.v !== 1 || copy.keyId !== keyId || typeof copy.iv !== "string" || typeof copy.ct !== "string")
    return null;
  let plain;
  try {
    plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: fromBase64url(copy.iv), additionalData: boundTo(accountId, messageId) },
      await copyKey(pair),
      fromBase64url(copy.ct),
    );
  } catch {
    throw new Error("Its opened copy in this browser was altered or belongs to another message.");
  }
  return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(plain));
}

const randomBytes = (n) => crypto.getRandomValues(new Uint8Array(n));
