// Message envelopes, version 1 (docs/SPEC.md §8): seal to recipient device keys and sign; open in the
// order §8.4 gives, naming the error class of each refusal.
import { concat, hex as hexOf, sha256, utf8 } from "./bytes.js";
import { Q, signLowS } from "./device-keys.js";
import * as hpke from "./hpke.js";

const MAGIC = Uint8Array.from([0x43, 0x53, 0x4d, 0x53, 0x47, 0x0d, 0x0a, 0x1a]);
const CONTENT_TYPE = "text/plain;charset=utf-8";
/** The largest text a message holds, in bytes of UTF-8: 1 MiB, as `MessageEnvelope.maxPlaintext` in
 *  Sources/CountersignCrypto/MessageEnvelope.swift (the CLI's and the server's limit, SPEC §8.5). */
export const MAX_PLAINTEXT = 1_048_576;
const INFO = utf8("countersign/v1 message key");
const PAYLOAD_INFO = utf8("countersign/v1 message payload");
const SIGNATURE_CONTEXT = concat(utf8("countersign/v1 message signature"), new Uint8Array([0]));

/** A refusal, with the error class of docs/SPEC.md §8.4 in `kind`. */
export class EnvelopeError extends Error {
  constructor(kind, detail) {
    super(`${kind}: ${detail}`);
    this.kind = kind;
  }
}

const u16 = (n) => Uint8Array.of(n >> 8, n & 0xff);
const u32 = (n) => Uint8Array.of(n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
function u64(n) {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(n));
  return out;
}
function compare(a, b) {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}
const equal = (a, b) => a.length === b.length && compare(a, b) === 0;

async function payloadKey(messageKey, messageId) {
  const ikm = await crypto.subtle.importKey("raw", messageKey, "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: messageId, info: PAYLOAD_INFO },
    ikm,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

/**
 * Seals `plaintext` (bytes) to `recipients` ([{keyId: 16 bytes, point: 65 bytes}]) and signs with the
 * sender's ECDSA private key. `fixed` (message ID, message key, created, ephemeral keys) is for vectors.
 */
export async function seal({ plaintext, senderKeyId, signingKey, recipients, created = Date.now(), fixed = {} }) {
  if (plaintext.length > MAX_PLAINTEXT) throw new EnvelopeError("too large", "a message is at most 1 MiB");
  if (recipients.length < 1 || recipients.length > 256) throw new EnvelopeError("malformed", "1 to 256 recipients");
  if (senderKeyId.length !== 16 || recipients.some(
    (r) => r.keyId.length !== 16 || r.point.length !== 65 || r.point[0] !== 4,
  )) {
    throw new EnvelopeError("malformed", "key IDs are 16 bytes and points 65 bytes, uncompressed");
  }
  const sorted = [...recipients].sort((a, b) => compare(a.keyId, b.keyId));
  for (let i = 1; i < sorted.length; i++) {
    if (equal(sorted[i - 1].keyId, sorted[i].keyId))
      throw new EnvelopeError("malformed", "a recipient key appears twice");
  }
  const messageId = fixed.messageId ?? crypto.getRandomValues(new Uint8Array(16));
  const messageKey = fixed.messageKey ?? crypto.getRandomValues(new Uint8Array(32));
  const stanzas = [];
  for (const [i, r] of sorted.entries()) {
    const { enc, ciphertext } = await hpke.seal(
      r.point,
      INFO,
      concat(messageId, r.keyId),
      messageKey,
      fixed.ephemeral?.[i],
    );
    stanzas.push(concat(r.keyId, enc, ciphertext));
  }
  const type = utf8(CONTENT_TYPE);
  const bodyLength = plaintext.length + 16;
  const header = concat(
    MAGIC,
    Uint8Array.of(1),
    senderKeyId,
    messageId,
    u64(created),
    Uint8Array.of(type.length),
    type,
    u16(sorted.length),
    ...stanzas,
    u32(bodyLength),
  );
  const key = await payloadKey(messageKey, messageId);
  const body = new Uint8Array(
    await crypto.subtle.encrypt({ name: "AES-GCM", iv: new Uint8Array(12), additionalData: header }, key, plaintext),
  );
  const signature = await signLowS(signingKey, concat(SIGNATURE_CONTEXT, await sha256(concat(header, body))));
  return concat(header, body, signature);
}

/** The header fields of an envelope, checked for shape (§8.4 steps 1–2); no keys needed. */
export function parse(bytes) {
  if (bytes.length < 8 || !equal(bytes.subarray(0, 8), MAGIC))
    throw new EnvelopeError("unknown format", "not a Countersign message");
  let at = 8;
  const take = (n) => {
    if (at + n > bytes.length) throw new EnvelopeError("malformed", "the message ends early");
    const out = bytes.subarray(at, at + n);
    at += n;
    return out;
  };
  const version = take(1)[0];
  if (version !== 1) throw new EnvelopeError("unknown version", `version ${version}`);
  const senderKeyId = take(16);
  const messageId = take(16);
  const created = Number(new DataView(take(8).slice().buffer).getBigUint64(0));
  const typeLength = take(1)[0];
  if (typeLength === 0 || typeLength > 127) throw new EnvelopeError("malformed", "content type length");
  const type = take(typeLength);
  if (type.some((b) => b < 0x21 || b > 0x7e)) throw new EnvelopeError("malformed", "content type");
  const n = (take(1)[0] << 8) | take(1)[0];
  if (n === 0 || n > 256) throw new EnvelopeError("malformed", `${n} recipients`);
  const stanzas = [];
  for (let i = 0; i < n; i++) {
    const stanza = { keyId: take(16), enc: take(65), wrapped: take(48) };
    if (stanzas.length && compare(stanzas[stanzas.length - 1].keyId, stanza.keyId) >= 0) {
      throw new EnvelopeError("malformed", "recipient key IDs are not strictly increasing");
    }
    stanzas.push(stanza);
  }
  const lengthBytes = take(4);
  const bodyLength = new DataView(lengthBytes.slice().buffer).getUint32(0);
  if (bodyLength < 16) throw new EnvelopeError("malformed", "body shorter than its tag");
  if (bodyLength > MAX_PLAINTEXT + 16) throw new EnvelopeError("too large", "body above 1 MiB");
  const headerEnd = at;
  if (bytes.length !== headerEnd + bodyLength + 64)
    throw new EnvelopeError("malformed", "the length is not header, body and signature");
  return {
    header: bytes.subarray(0, headerEnd),
    body: bytes.subarray(headerEnd, headerEnd + bodyLength),
    signature: bytes.subarray(headerEnd + bodyLength),
    senderKeyId,
    messageId,
    created,
    contentType: new TextDecoder().decode(type),
    stanzas,
  };
}

/**
 * Opens an envelope (§8.4): the sender expected (`senderSpki`, its SPKI DER: its key ID and verifying key
 * both come from it), then the reader's own key (`keyId`, ECDH `privateKey`, its `point`). Verifies
 * before it decrypts anything.
 */
export async function open(bytes, { senderSpki, keyId, privateKey, point }) {
  const e = parse(bytes);
  const senderKeyId = (await sha256(senderSpki)).subarray(0, 16);
  const verifyKey = await crypto.subtle.importKey("spki", senderSpki, { name: "ECDSA", namedCurve: "P-256" }, false, [
    "verify",
  ]);
  if (!equal(e.senderKeyId, senderKeyId)) {
    throw new EnvelopeError("bad signature", `signed by key ${hexOf(e.senderKeyId)}, expected ${hexOf(senderKeyId)}`);
  }
  const r = BigInt("0x" + hexOf(e.signature.subarray(0, 32)));
  const s = BigInt("0x" + hexOf(e.signature.subarray(32)));
  if (r < 1n || r >= Q || s < 1n || s > (Q - 1n) / 2n)
    throw new EnvelopeError("bad signature", "signature out of range or high S");
  const signed = concat(SIGNATURE_CONTEXT, await sha256(concat(e.header, e.body)));
  const ok = await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, verifyKey, e.signature, signed);
  if (!ok) throw new EnvelopeError("bad signature", "the signature does not verify");
  const stanza = e.stanzas.find((st) => equal(st.keyId, keyId));
  if (!stanza) {
    throw new EnvelopeError(
      "not for this key",
      `sealed to ${e.stanzas.map((st) => hexOf(st.keyId)).join(", ")}, not ${hexOf(keyId)}`,
    );
  }
  let plaintext;
  try {
    const messageKey = await hpke.open(privateKey, point, stanza.enc, INFO, concat(e.messageId, keyId), stanza.wrapped);
    const key = await payloadKey(messageKey, e.messageId);
    plaintext = new Uint8Array(
      await crypto.subtle.decrypt({ name: "AES-GCM", iv: new Uint8Array(12), additionalData: e.header }, key, e.body),
    );
  } catch {
    throw new EnvelopeError("tampered", "the message key or the body does not open");
  }
  return { plaintext, ...e };
}
