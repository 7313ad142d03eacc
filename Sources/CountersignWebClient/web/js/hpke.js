// HPKE base mode (RFC 9180) for one suite: DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-256-GCM
// (docs/SPEC.md §4.2), single-shot seal and open, over WebCrypto (ECDH, HMAC, AES-GCM).
import { concat, utf8 } from "./bytes.js";

const KEM_ID = 0x0010;
const KDF_ID = 0x0001;
const AEAD_ID = 0x0002;
const i2osp = (n, w) => Uint8Array.from({ length: w }, (_, i) => (n >> (8 * (w - 1 - i))) & 0xff);
const KEM_SUITE = concat(utf8("KEM"), i2osp(KEM_ID, 2));
const HPKE_SUITE = concat(utf8("HPKE"), i2osp(KEM_ID, 2), i2osp(KDF_ID, 2), i2osp(AEAD_ID, 2));
const VERSION = utf8("HPKE-v1");

async function hmac(key, data) {
  // An empty HMAC key is the same as HashLen zero bytes (RFC 2104 pads keys with zeros); WebCrypto
  // refuses empty keys, so give it the zeros.
  const raw = key.length ? key : new Uint8Array(32);
  const k = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, data));
}

async function labeledExtract(suite, salt, label, ikm) {
  return hmac(salt, concat(VERSION, suite, utf8(label), ikm));
}

async function labeledExpand(suite, prk, label, info, length) {
  const labeled = concat(i2osp(length, 2), VERSION, suite, utf8(label), info);
  const out = [];
  let t = new Uint8Array(0);
  for (let i = 1; out.length * 32 < length; i++) {
    t = await hmac(prk, concat(t, labeled, new Uint8Array([i])));
    out.push(t);
  }
  return concat(...out).subarray(0, length);
}

async function dh(privateKey, publicPoint) {
  const pub = await crypto.subtle.importKey("raw", publicPoint, { name: "ECDH", namedCurve: "P-256" }, false, []);
  return new Uint8Array(await crypto.subtle.deriveBits({ name: "ECDH", public: pub }, privateKey, 256));
}

async function sharedSecret(dhBytes, enc, recipientPoint) {
  const prk = await labeledExtract(KEM_SUITE, new Uint8Array(0), "eae_prk", dhBytes);
  return labeledExpand(KEM_SUITE, prk, "shared_secret", concat(enc, recipientPoint), 32);
}

async function keySchedule(secret, info) {
  const empty = new Uint8Array(0);
  const context = concat(
    new Uint8Array([0]),
    await labeledExtract(HPKE_SUITE, empty, "psk_id_hash", empty),
    await labeledExtract(HPKE_SUITE, empty, "info_hash", info),
  );
  const prk = await labeledExtract(HPKE_SUITE, secret, "secret", empty);
  const key = await labeledExpand(HPKE_SUITE, prk, "key", context, 32);
  const nonce = await labeledExpand(HPKE_SUITE, prk, "base_nonce", context, 12);
  return {
    key: await crypto.subtle.importKey("raw", key, "AES-GCM", false, ["encrypt", "decrypt"]),
    nonce,
  };
}

export async function rawPoint(publicKey) {
  return new Uint8Array(await crypto.subtle.exportKey("raw", publicKey));
}

/** Seals `plaintext` to the P-256 point `recipient` (65 bytes). `ephemeral` is for test vectors only. */
export async function seal(recipient, info, aad, plaintext, ephemeral) {
  const pair = ephemeral ?? (await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, false, [
    "deriveBits",
  ]));
  const enc = await rawPoint(pair.publicKey);
  const secret = await sharedSecret(await dh(pair.privateKey, recipient), enc, recipient);
  const { key, nonce } = await keySchedule(secret, info);
  const ct = await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce, additionalData: aad }, key, plaintext);
  return { enc, ciphertext: new Uint8Array(ct) };
}

/** Opens what `seal` made for the key pair whose private half is `privateKey` and point `recipient`. */
export async function open(privateKey, recipient, enc, info, aad, ciphertext) {
  const secret = await sharedSecret(await dh(privateKey, enc), enc, recipient);
  const { key, nonce } = await keySchedule(secret, info);
  return new Uint8Array(
    await crypto.subtle.decrypt({ name: "AES-GCM", iv: nonce, additionalData: aad }, key, ciphertext),
  );
}
