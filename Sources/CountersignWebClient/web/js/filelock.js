// FileLock's package (docs/SPEC.md §3), byte-compatible with the FileLock iOS app: one AES-256-GCM
// message whose key is wrapped by Apple's eciesEncryptionCofactorX963SHA256AESGCM. One GCM message has
// to be held whole, so it is made and read in memory, up to 256 MiB of plaintext.
import { concat, sha256 } from "./bytes.js";
import { fingerprintText } from "./pem.js";
import { SealError } from "./seal-error.js";

export const MAX_PLAINTEXT = 256 * 1024 * 1024;
const WRAPPED = 113;
// Apple's zero IV for the key wrap is safe only because the wrap key is fresh for each ephemeral key.
const ZERO_IV = new Uint8Array(16);
const u32 = (n) => Uint8Array.of(n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);

/** ANSI X9.63 KDF with sharedInfo = the ephemeral point: SHA-256(Z || u32(1) || E)[0..16], an AES-128 key. */
async function wrapKey(z, ephemeralPoint) {
  const k = (await sha256(concat(z, u32(1), ephemeralPoint))).subarray(0, 16);
  return crypto.subtle.importKey("raw", k, "AES-GCM", false, ["encrypt", "decrypt"]);
}

const ecdhPublic = (point) => crypto.subtle.importKey("raw", point, { name: "ECDH", namedCurve: "P-256" }, false, []);
const dh = async (privateKey, point) => new Uint8Array(
  await crypto.subtle.deriveBits({ name: "ECDH", public: await ecdhPublic(point) }, privateKey, 256),
);

/** Seals `plaintext` (bytes) to the recipient's 65-byte point. `fixed` pins the randomness (tests only). */
export async function seal(plaintext, recipient, fixed = {}) {
  if (plaintext.length > MAX_PLAINTEXT)
    throw new SealError(
      "too large",
      "the FileLock format is held in memory and limited to 256 MiB; use the Countersign format",
    );
  const fileKey = fixed.fileKey ?? crypto.getRandomValues(new Uint8Array(32));
  const nonce = fixed.nonce ?? crypto.getRandomValues(new Uint8Array(12));
  const eph = await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, false, ["deriveBits"]);
  const e = new Uint8Array(await crypto.subtle.exportKey("raw", eph.publicKey));
  const k = await wrapKey(await dh(eph.privateKey, recipient), e);
  const wrapped = concat(e, new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv: ZERO_IV }, k, fileKey)));
  const key = await crypto.subtle.importKey("raw", fileKey, "AES-GCM", false, ["encrypt"]);
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce }, key, plaintext));
  const ct = sealed.subarray(0, sealed.length - 16);
  const tag = sealed.subarray(sealed.length - 16);
  return concat(u32(WRAPPED), wrapped, u32(12), nonce, u32(ct.length), ct, u32(16), tag);
}

/** Opens a package with `identity` ({agreement, keyId}); checks in the order of docs/SPEC.md §3. */
export async function open(bytes, identity) {
  const chunks = [];
  let at = 0;
  for (const [i, expected] of [WRAPPED, 12, null, 16].entries()) {
    if (bytes.length - at < 4) throw new SealError("malformed", `missing length header for chunk ${i + 1}`);
    const len = new DataView(bytes.buffer, bytes.byteOffset + at, 4).getUint32(0);
    at += 4;
    if (expected !== null && len !== expected)
      throw new SealError("malformed", `chunk ${i + 1} is ${len} bytes, expected ${expected}`);
    if (expected === null && len > MAX_PLAINTEXT)
      throw new SealError("too large", "the FileLock format is held in memory and limited to 256 MiB");
    if (bytes.length - at < len)
      throw new SealError(
        "malformed",
        `chunk length mismatch: chunk ${i + 1} wants ${len} bytes, ${bytes.length - at} remain`,
      );
    chunks.push(bytes.subarray(at, at + len));
    at += len;
  }
  if (at !== bytes.length) throw new SealError("malformed", `${bytes.length - at} trailing bytes after the tag`);
  const [wrapped, nonce, ct, tag] = chunks;
  const e = wrapped.subarray(0, 65);
  let z;
  try {
    z = await dh(identity.agreement, e);
  } catch {
    throw new SealError("header", "the wrapped key's ephemeral point is invalid");
  }
  let fileKey;
  try {
    fileKey = new Uint8Array(
      await crypto.subtle.decrypt({ name: "AES-GCM", iv: ZERO_IV }, await wrapKey(z, e), wrapped.subarray(65)),
    );
  } catch {
    // The format names no recipient: a wrong key and an altered wrap look the same.
    throw new SealError(
      "not for this key",
      `a FileLock package names no recipient; its key wrap does not open with ${fingerprintText(identity.keyId)}`,
    );
  }
  const key = await crypto.subtle.importKey("raw", fileKey, "AES-GCM", false, ["decrypt"]);
  try {
    return new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv: nonce }, key, concat(ct, tag)));
  } catch {
    throw new SealError("tampered", "the payload failed authentication");
  }
}
