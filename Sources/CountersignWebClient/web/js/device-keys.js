// The browser's device keys (docs/PROTOCOL.md §1): a P-256 signing key (ECDSA) and a P-256 encryption
// key (ECDH, for HPKE), made by WebCrypto with non-extractable private halves, and signatures in the
// form the server verifies: r || s with low S (docs/SPEC.md §1).
import { concat, hex, lv, sha256, utf8 } from "./bytes.js";

/** The order q of the P-256 group. */
export const Q = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;

/** `extractable` only for keys made for the key gate, which wraps them at once (SPEC §14.4). */
export async function makeDeviceKeys(extractable = false) {
  const signing = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, extractable, [
    "sign",
    "verify",
  ]);
  const encryption = await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, extractable, [
    "deriveBits",
  ]);
  return { signing, encryption };
}

export async function spki(publicKey) {
  return new Uint8Array(await crypto.subtle.exportKey("spki", publicKey));
}

function bigint(bytes) {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  return n;
}

function bytes32(n) {
  const out = new Uint8Array(32);
  for (let i = 31; i >= 0; i--) {
    out[i] = Number(n & 0xffn);
    n >>= 8n;
  }
  return out;
}

/** ECDSA P-256 / SHA-256 of `message`, as r || s with s ≤ (q − 1)/2: WebCrypto may give either s. */
export async function signLowS(privateKey, message) {
  const raw = new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, privateKey, message));
  const s = bigint(raw.subarray(32));
  if (s <= (Q - 1n) / 2n) return raw;
  return concat(raw.subarray(0, 32), bytes32(Q - s));
}

const context = (name) => concat(utf8(`countersign/v1 ${name}`), new Uint8Array([0]));

export async function registrationMessage(challenge, accountId, signingSpki, encryptionSpki) {
  return concat(
    context("device registration"),
    await sha256(concat(challenge, lv(utf8(accountId)), lv(signingSpki), lv(encryptionSpki))),
  );
}

export async function sessionMessage(nonce, deviceId) {
  return concat(context("device session"), await sha256(concat(nonce, lv(utf8(deviceId)))));
}

// Staying signed in (PROTOCOL §1.1): DeviceProof.bindingMessage and DeviceProof.resumptionMessage.
export async function bindingMessage(accountId, bindingSpki) {
  return concat(context("session binding"), await sha256(concat(lv(utf8(accountId)), lv(bindingSpki))));
}

export async function resumptionMessage(nonce, bindingId) {
  return concat(context("session resumption"), await sha256(concat(nonce, lv(utf8(bindingId)))));
}

// A device setting its key gate's revocation token (SPEC §14.5): DeviceProof.revocationTokenMessage.
export async function revocationTokenMessage(deviceId, accountId, tokenHash) {
  return concat(
    context("revocation token"),
    await sha256(concat(lv(utf8(deviceId)), lv(utf8(accountId)), lv(tokenHash))),
  );
}

export async function rotationMessage(deviceId, oldSigningSpki, newSigningSpki, newEncryptionSpki) {
  return concat(
    context("key rotation"),
    await sha256(concat(lv(utf8(deviceId)), lv(oldSigningSpki), lv(newSigningSpki), lv(newEncryptionSpki))),
  );
}

/** Whole seconds since 1970 as 8 bytes, big-endian (two's complement, as DeviceProof's Int64). */
function seconds64(seconds) {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigInt64(0, BigInt(Math.trunc(seconds)));
  return out;
}

/** A device of the account vouching for a new one (linking, PROTOCOL §1): DeviceProof.vouchMessage. */
export async function vouchMessage({
  username,
  voucherDeviceId,
  voucherSigningSpki,
  deviceId,
  signingSpki,
  encryptionSpki,
  vouchedAt,
}) {
  return concat(
    context("device vouch"),
    await sha256(
      concat(
        lv(utf8(username)),
        lv(utf8(voucherDeviceId)),
        lv(voucherSigningSpki),
        lv(utf8(deviceId)),
        lv(signingSpki),
        lv(encryptionSpki),
        seconds64(vouchedAt),
      ),
    ),
  );
}

/** A messaging device endorsing an authenticator as an approver (PROTOCOL §1.2): DeviceProof.endorsementMessage. */
export async function endorsementMessage({
  username,
  endorserDeviceId,
  endorserSigningSpki,
  approverDeviceId,
  approverSigningSpki,
  endorsedAt,
}) {
  return concat(
    context("approver endorsement"),
    await sha256(
      concat(
        lv(utf8(username)),
        lv(utf8(endorserDeviceId)),
        lv(endorserSigningSpki),
        lv(utf8(approverDeviceId)),
        lv(approverSigningSpki),
        seconds64(endorsedAt),
      ),
    ),
  );
}

/** The code a new device shows while it waits to be linked, and its approver beside "Is this your new
 *  device?": DeviceProof.linkCode, six groups of four digits from both of the device's keys. */
export async function linkCode(signingSpki, encryptionSpki) {
  const framed = concat(context("link code"), await sha256(concat(lv(signingSpki), lv(encryptionSpki))));
  const digest = await sha256(framed);
  const groups = [];
  for (let i = 0; i < 6; i++) {
    const n = ((digest[3 * i] << 16) | (digest[3 * i + 1] << 8) | digest[3 * i + 2]) % 10_000;
    groups.push(String(n).padStart(4, "0"));
  }
  return groups.join(" ");
}

/** Verifies a 64-byte r || s low-S signature (docs/SPEC.md §1) under a P-256 SPKI: high S is refused. */
export async function verifyLowS(signerSpki, message, signature) {
  if (signature.length !== 64) return false;
  const r = bigint(signature.subarray(0, 32));
  const s = bigint(signature.subarray(32));
  if (r < 1n || r >= Q || s < 1n || s > (Q - 1n) / 2n) return false;
  let key;
  try {
    key = await crypto.subtle.importKey("spki", signerSpki, { name: "ECDSA", namedCurve: "P-256" }, false, ["verify"]);
  } catch {
    return false;
  }
  return crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key, signature, message);
}

/** The key ID (docs/SPEC.md §2.4) of a P-256 SPKI, in hex; null when the bytes are not one. */
export async function keyIdOf(spkiBytes) {
  // The one form keys travel in (SPEC §2.3): 91 bytes, an uncompressed point.
  if (spkiBytes.length !== 91) return null;
  try {
    await crypto.subtle.importKey("spki", spkiBytes, { name: "ECDSA", namedCurve: "P-256" }, true, ["verify"]);
  } catch {
    return null;
  }
  return hex((await sha256(spkiBytes)).subarray(0, 16));
}
