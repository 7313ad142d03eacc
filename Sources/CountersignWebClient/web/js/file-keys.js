// The key pair for files (docs/SPEC.md §2.1: one P-256 scalar that both opens files sealed to it, by
// ECDH, and signs what its owner seals, by ECDSA). WebCrypto binds a CryptoKey to one algorithm, so the
// scalar is imported twice, both times non-extractable: the page can use it and never read it back.
// Kept in IndexedDB, one per account, in a database of its own beside the device keys' (keystore.js).
import { fromBase64url } from "./bytes.js";
import { KeyError, keyIdOf, validPoint } from "./pem.js";
import { readPrivateKeyFile } from "./pkcs8.js";

/** An identity from a PrivateKeyInfo DER: {agreement, signing, point, keyId}. */
export async function identityFromPKCS8(pkcs8) {
  let jwk;
  try {
    // Extractable only for this moment, to learn the public point; dropped at once.
    const probe = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "ECDH", namedCurve: "P-256" }, true, [
      "deriveBits",
    ]);
    jwk = await crypto.subtle.exportKey("jwk", probe);
  } catch {
    throw new KeyError("malformed key", "the PrivateKeyInfo does not hold a valid P-256 key");
  }
  const point = await validPoint(Uint8Array.of(4, ...fromBase64url(jwk.x), ...fromBase64url(jwk.y)));
  const agreement = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "ECDH", namedCurve: "P-256" }, false, [
    "deriveBits",
  ]);
  const signing = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "ECDSA", namedCurve: "P-256" }, false, [
    "sign",
  ]);
  return { agreement, signing, point, keyId: await keyIdOf(point) };
}

export async function generateIdentity() {
  const pair = await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"]);
  return identityFromPKCS8(new Uint8Array(await crypto.subtle.exportKey("pkcs8", pair.privateKey)));
}

/** A `countersign keygen` (or OpenSSL) key file; `passphrase()` → UTF-8 bytes, asked only if encrypted. */
export async function importIdentity(text, passphrase) {
  return identityFromPKCS8(await readPrivateKeyFile(text, passphrase));
}

const DB = "countersign-files";

function open() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB, 1);
    request.onupgradeneeded = () => request.result.createObjectStore("keys", { keyPath: "accountId" });
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(new Error(`This browser's storage cannot be opened: ${request.error?.message}`));
  });
}

async function run(mode, body) {
  const db = await open();
  try {
    return await new Promise((resolve, reject) => {
      const tx = db.transaction("keys", mode);
      const request = body(tx.objectStore("keys"));
      tx.oncomplete = () => resolve(request.result);
      tx.onerror = tx.onabort = () => reject(new Error(`This browser's storage failed: ${tx.error?.message}`));
    });
  } finally {
    db.close();
  }
}

export const fileKeys = {
  /** The account's file key: {accountId, agreement, signing, point, keyId, origin, created} or undefined. */
  get: (accountId) => run("readonly", (store) => store.get(accountId)),
  /** Replaces the account's file key (one per account, as FileLock kept one). */
  save: (accountId, identity, origin) => run(
    "readwrite",
    (store) => store.put({ accountId, ...identity, origin, created: Date.now() }),
  ),
  remove: (accountId) => run("readwrite", (store) => store.delete(accountId)),
};
