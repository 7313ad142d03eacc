// The Countersign sealed file, version 1 (docs/SPEC.md §4): header, STREAM payload in 64 KiB chunks and
// the optional encrypted sender signature. Input is a Blob (a chosen File) read a batch of chunks at a
// time; output goes to a BlobSink, so neither is ever held whole in the page's memory (the browser
// keeps large Blobs on disk). Opening checks in the order of §4.5 and names each refusal's class.
import { concat, utf8 } from "./bytes.js";
import { signLowS } from "./device-keys.js";
import * as hpke from "./hpke.js";
import { fingerprintText, keyIdOf, validPoint } from "./pem.js";
import { SealError } from "./seal-error.js";
import { SHA256 } from "./sha256-stream.js";

const MAGIC = utf8("CSEAL\r\n\x1a");
const FIXED = 28; // magic, version, flags, salt, u16(n)
const STANZA = 16 + 65 + 48;
const MAC = 32;
const CHUNK = 65536;
const SEALED_CHUNK = CHUNK + 16;
const BLOCK = 65 + 64 + 16;
// Chunks per batch: 4 MiB read at once and sealed or opened in parallel.
const BATCH = 64;
const FILE_KEY_INFO = utf8("countersign/v1 file key");
const SIGNATURE_PREFIX = concat(utf8("countersign/v1 signature"), Uint8Array.of(0));
const ZERO_NONCE = new Uint8Array(12);

const u16 = (n) => Uint8Array.of(n >> 8, n & 0xff);
const equal = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const read = async (blob, start, end) => new Uint8Array(await blob.slice(start, end).arrayBuffer());

// The Blob readers in use, held from the first read to release(). Chromium does not keep a BYOB read
// on a Blob's stream alive by itself: the code awaiting it (a seal or open started by a click) is
// reachable only through that read's own promise, so a garbage collection during the read collected
// reader, stream and awaiting code together, and the read never settled. The operation then stopped
// for good ("Encrypting… 7 %", no CPU) whenever a collection fell on a read: 2 runs in 8 at 50 MiB.
const reading = new Set();

/** Reads `blob[start..end]` in pieces of exactly `n` bytes (the last one shorter) through the Blob's
 *  byte stream: several times faster in Chromium than a slice().arrayBuffer() per piece. Call
 *  `release()` on the returned function when done, read to the end or not. */
function batches(blob, start, end, n) {
  const reader = blob.slice(start, end).stream().getReader({ mode: "byob" });
  reading.add(reader);
  const next = async (want = n) => {
    let buffer = new Uint8Array(want);
    let got = 0;
    while (got < want) {
      const { done, value } = await reader.read(buffer.subarray(got));
      // The read transfers the buffer: its bytes come back in `value`, even at the end.
      if (value) buffer = new Uint8Array(value.buffer);
      if (done) break;
      got += value.length;
    }
    return buffer.subarray(0, got);
  };
  // Cancelling stops the browser reading the file, and settles a read still in flight.
  next.release = () => reading.delete(reader) && reader.cancel().catch(() => {});
  return next;
}

/** How many Blob readers are in use (0 after every seal and open, finished, refused or cancelled). */
export const readersInUse = () => reading.size;

/** u88(counter) || last */
function nonce(counter, last) {
  const n = new Uint8Array(12);
  let c = counter;
  for (let i = 10; i >= 3 && c > 0; i--, c = Math.floor(c / 256)) n[i] = c % 256;
  n[11] = last ? 1 : 0;
  return n;
}

async function hkdf(fileKey, salt, info, usage) {
  const ikm = await crypto.subtle.importKey("raw", fileKey, "HKDF", false, ["deriveKey"]);
  const params = { name: "HKDF", hash: "SHA-256", salt, info: utf8(info) };
  const alg = usage === "mac" ? { name: "HMAC", hash: "SHA-256", length: 256 } : { name: "AES-GCM", length: 256 };
  return crypto.subtle.deriveKey(
    params,
    ikm,
    alg,
    false,
    usage === "mac" ? ["sign", "verify"] : ["encrypt", "decrypt"],
  );
}

const keys = async (fileKey, salt) => ({
  header: await hkdf(fileKey, new Uint8Array(0), "countersign/v1 header", "mac"),
  payload: await hkdf(fileKey, salt, "countersign/v1 payload"),
  signature: await hkdf(fileKey, salt, "countersign/v1 signature"),
});

/** Where output goes: parts handed to the browser's Blob storage every few MiB, one Blob at the end. */
export class BlobSink {
  constructor(type = "application/octet-stream") {
    this.type = type;
    this.blobs = [];
    this.parts = [];
    this.pending = 0;
  }
  write(bytes) {
    this.parts.push(bytes);
    this.pending += bytes.length;
    if (this.pending >= 16 * 1024 * 1024) this.flush();
  }
  flush() {
    if (this.parts.length) this.blobs.push(new Blob(this.parts));
    this.parts = [];
    this.pending = 0;
  }
  blob() {
    this.flush();
    return new Blob(this.blobs, { type: this.type });
  }
}

/** Output nowhere: a first pass that checks a whole file (every chunk, its end, the signature) before
 *  any of its plaintext is written where the user or another program could see it. */
export class CheckSink {
  write() {}
}

/** Output to a file the user chose (File System Access API): written as it comes, so neither the page
 *  nor the browser holds it. The browser writes to a temporary file beside it and puts it in place only
 *  on close(); the picker has already made the file itself (empty), so abort() discards what was written
 *  and removes that file too. Decrypted output comes here only in a second pass, after a CheckSink pass
 *  verified the whole file (docs/SPEC.md §4.6). */
export class FileSink {
  constructor({ handle, writable }) {
    this.handle = handle;
    this.writable = writable;
    this.parts = [];
    this.pending = 0;
  }
  /** Collects 4 MiB before each write: one write per 64 KiB chunk is an IPC round trip each. */
  async write(bytes) {
    this.parts.push(bytes);
    this.pending += bytes.length;
    if (this.pending >= 4 * 1024 * 1024) await this.flush();
  }
  async flush() {
    if (this.parts.length) await this.writable.write(concat(...this.parts));
    this.parts = [];
    this.pending = 0;
  }
  /** Puts the file in place: only after every check passed. */
  async close() {
    await this.flush();
    await this.writable.close();
  }
  /** Discards everything written, and the file the picker made. */
  async abort() {
    this.parts = [];
    await this.writable.abort().catch(() => {});
    await this.handle.remove?.().catch(() => {});
  }
}

/**
 * Seals `file` (a Blob) to `recipients` (65-byte points) into a Blob. With `signer` (an identity from
 * file-keys.js) the file carries the encrypted sender signature; with `fileName` the name travels inside
 * the encryption. `onProgress(done, total)` follows the plaintext read. With `sink` (a FileSink) the
 * output goes there and this returns null. With `signal` (an AbortSignal) an abort stops it at the
 * next batch, throwing the signal's reason; what was written is then the caller's to discard.
 */
/**
 * Runs sealing's or opening's three overlapping stages over `chunks` chunks, BATCH at a time: batch i+2 is
 * read (`load(first)`) while batch i+1 is encrypted or decrypted (`work(first, bytes)`, on WebCrypto's own
 * thread) and batch i is handed on (`drain(result)`, on this thread). Stops between batches at `signal`.
 */
async function inBatches(chunks, { load, work, drain, signal }) {
  let next = load(0);
  let pending = null;
  for (let first = 0; first < chunks; first += BATCH) {
    const bytes = await next;
    signal?.throwIfAborted();
    if (first + BATCH < chunks) next = load(first + BATCH);
    const current = work(first, bytes);
    if (pending) await drain(pending);
    pending = current;
  }
  await drain(pending);
}

export async function seal(file, {
  recipients,
  signer = null,
  fileName = "",
  sink = null,
  signal = null,
  onProgress = () => {},
}) {
  if (recipients.length < 1 || recipients.length > 256) throw new SealError("invalid argument", "1 to 256 recipients");
  const name = utf8(fileName ?? "");
  if (name.length > 255 || /[/\\\0]/.test(fileName ?? ""))
    throw new SealError(
      "invalid argument",
      "the file name to carry must be at most 255 bytes of UTF-8 without '/', '\\' or NUL",
    );
  const fileKey = crypto.getRandomValues(new Uint8Array(32));
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const stanzas = [];
  for (const r of recipients) {
    const point = await validPoint(r);
    const keyId = await keyIdOf(point);
    const { enc, ciphertext } = await hpke.seal(point, FILE_KEY_INFO, keyId, fileKey);
    stanzas.push(keyId, enc, ciphertext);
  }
  const k = await keys(fileKey, salt);
  const unmaced = concat(MAGIC, Uint8Array.of(1, signer ? 1 : 0), salt, u16(recipients.length), ...stanzas);
  const header = concat(unmaced, new Uint8Array(await crypto.subtle.sign("HMAC", k.header, unmaced)));
  const out = sink ?? new BlobSink();
  await out.write(header);
  const transcript = signer ? new SHA256().update(header) : null;

  const prefix = concat(u16(name.length), name);
  const total = prefix.length + file.size;
  const chunks = Math.ceil(total / CHUNK);
  // Batch 0 starts with the prefix, so it takes that many fewer bytes of the file.
  const nextBatch = batches(file, 0, file.size, BATCH * CHUNK);
  const firstBatch = () => nextBatch(BATCH * CHUNK - prefix.length);
  const load = async (at) => (at === 0 ? concat(prefix, await firstBatch()) : nextBatch());
  const encrypt = (first, plain) => {
    const count = Math.min(BATCH, chunks - first);
    return Promise.all(
      Array.from({ length: count }, (_, j) => {
        const i = first + j;
        return crypto.subtle.encrypt(
          { name: "AES-GCM", iv: nonce(i, i === chunks - 1) },
          k.payload,
          plain.subarray(j * CHUNK, (j + 1) * CHUNK),
        );
      }),
    ).then((sealed) => ({ first, count, sealed }));
  };
  const drain = async (batch) => {
    const { first, count, sealed } = await batch;
    for (const c of sealed) {
      const bytes = new Uint8Array(c);
      transcript?.update(bytes);
      await out.write(bytes);
    }
    onProgress(Math.min(file.size, (first + count) * CHUNK - prefix.length), file.size);
  };
  try {
    await inBatches(chunks, { load, work: encrypt, drain, signal });
  } finally {
    nextBatch.release();
  }
  signal?.throwIfAborted();
  if (signer) {
    const signature = await signLowS(signer.signing, concat(SIGNATURE_PREFIX, transcript.digest()));
    await out.write(
      new Uint8Array(
        await crypto.subtle.encrypt({ name: "AES-GCM", iv: ZERO_NONCE }, k.signature, concat(signer.point, signature)),
      ),
    );
  }
  return sink ? null : out.blob();
}

/** Which format the first bytes say (docs/SPEC.md §4.7): "countersign", "filelock" or null. */
export function detect(head) {
  if (head.length >= 8 && equal(head.subarray(0, 8), MAGIC)) return "countersign";
  if (head.length >= 4 && equal(head.subarray(0, 4), Uint8Array.of(0, 0, 0, 113))) return "filelock";
  return null;
}

async function opens(key, iv, sealed) {
  if (sealed.length < 16) return null;
  try {
    return new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv }, key, sealed));
  } catch {
    return null;
  }
}

/**
 * Opens a sealed file (a Blob) with `identity` ({agreement, point, keyId}). With `expectedSender` (a
 * point) the file must be signed by that key. Plaintext goes to `sink` (a BlobSink by default) as
 * each chunk's tag verifies; the result is complete only when this returns: on any refusal the caller
 * must drop the sink (the Files screen never offers it), also when `signal` aborts it (as in seal).
 * Returns {sink, fileName, signer}.
 */
export async function open(blob, {
  identity,
  expectedSender = null,
  sink = new BlobSink(),
  signal = null,
  onProgress = () => {},
}) {
  const size = blob.size;
  const fixed = await read(blob, 0, Math.min(size, FIXED));
  if (fixed.length < 8 || !equal(fixed.subarray(0, 8), MAGIC))
    throw new SealError("unknown format", "this is neither a Countersign sealed file nor a FileLock package");
  if (fixed.length < 9) throw new SealError("header", "the file ends inside the header");
  if (fixed[8] !== 1)
    throw new SealError(
      "unknown version",
      `version ${fixed[8]}: this file was sealed by a newer Countersign; upgrade to open it`,
    );
  if (fixed.length < FIXED) throw new SealError("header", "the file ends inside the header");
  const flags = fixed[9];
  if (flags & ~1) throw new SealError("header", `unknown flags 0x${flags.toString(16)}`);
  const signed = flags === 1;
  const salt = fixed.subarray(10, 26);
  const n = (fixed[26] << 8) | fixed[27];
  if (n < 1 || n > 256) throw new SealError("header", `recipient count ${n} is out of range`);
  const headerLength = FIXED + n * STANZA + MAC;
  if (size < headerLength) throw new SealError("header", "the file ends inside the header");
  const header = await read(blob, 0, headerLength);

  const sealedTo = [];
  let fileKey = null;
  for (let i = 0; i < n; i++) {
    const s = FIXED + i * STANZA;
    const keyId = header.subarray(s, s + 16);
    sealedTo.push(fingerprintText(keyId));
    if (fileKey || !equal(keyId, identity.keyId)) continue;
    try {
      fileKey = await hpke.open(
        identity.agreement,
        identity.point,
        header.subarray(s + 16, s + 81),
        FILE_KEY_INFO,
        keyId,
        header.subarray(s + 81, s + STANZA),
      );
    } catch {
      throw new SealError("header", "the recipient stanza for this key does not unwrap");
    }
  }
  if (!fileKey) {
    throw new SealError(
      "not for this key",
      `the file is sealed to ${sealedTo.join(", ")}; your key is ${fingerprintText(identity.keyId)}`,
    );
  }
  const k = await keys(fileKey, salt);
  const macAt = headerLength - MAC;
  if (!(await crypto.subtle.verify("HMAC", k.header, header.subarray(macAt), header.subarray(0, macAt)))) {
    throw new SealError("header", "the header MAC does not verify");
  }
  if (expectedSender && !signed)
    throw new SealError("signature missing", "the file is not signed, but a sender was demanded");

  const transcript = signed ? new SHA256().update(header) : null;
  const trailer = signed ? BLOCK : 0;
  const payload = size - headerLength - trailer;
  if (payload < 17) throw new SealError("truncated", "the file ends before its final chunk; get a complete copy");
  const chunks = Math.ceil(payload / SEALED_CHUNK);
  const payloadEnd = headerLength + payload;
  let nameRead = false;
  let fileName = null;
  // Each batch is checked and released before the one after next is read (inBatches).
  const load = batches(blob, headerLength, payloadEnd, BATCH * SEALED_CHUNK);
  const decrypt = (first, bytes) => {
    const count = Math.min(BATCH, chunks - first);
    const parts = Array.from({ length: count }, (_, j) => bytes.subarray(j * SEALED_CHUNK, (j + 1) * SEALED_CHUNK));
    return Promise.all(parts.map((c, j) => opens(k.payload, nonce(first + j, first + j === chunks - 1), c))).then(
      (opened) => ({ first, count, parts, opened }),
    );
  };
  const drain = async (batch) => {
    const { first, count, parts, opened } = await batch;
    for (let j = 0; j < count; j++) {
      const i = first + j;
      const isFinal = i === chunks - 1;
      if (isFinal && parts[j].length < 17)
        throw new SealError("truncated", "the file ends before its final chunk; get a complete copy");
      if (!opened[j]) {
        if (!isFinal) throw new SealError("tampered", `chunk ${i} failed authentication`);
        throw await finalFailure(blob, headerLength + i * SEALED_CHUNK, k.payload, i, signed);
      }
      transcript?.update(parts[j]);
      let body = opened[j];
      if (!nameRead) {
        const len = body.length >= 2 ? (body[0] << 8) | body[1] : -1;
        if (len < 0 || len > 255 || body.length < 2 + len)
          throw new SealError("tampered", "the carried file name is malformed");
        const nameBytes = body.subarray(2, 2 + len);
        let name;
        try {
          // As Swift reads it: a leading U+FEFF is part of the name, not a byte order mark.
          name = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(nameBytes);
        } catch {
          throw new SealError("tampered", "the carried file name is not UTF-8");
        }
        if (/[/\\\0]/.test(name)) throw new SealError("tampered", "the carried file name holds '/', '\\' or NUL");
        nameRead = true;
        fileName = len ? name : null;
        body = body.subarray(2 + len);
      }
      await sink.write(body);
    }
    onProgress(headerLength + Math.min(payload, (first + count) * SEALED_CHUNK), size);
  };
  try {
    await inBatches(chunks, { load: () => load(), work: decrypt, drain, signal });
  } finally {
    load.release();
  }
  signal?.throwIfAborted();
  if (!signed) return { sink, fileName, signer: null };

  const content = await opens(k.signature, ZERO_NONCE, await read(blob, payloadEnd, size));
  if (!content || content.length !== 129) throw new SealError("tampered", "the signature block failed authentication");
  let signer, verifyKey;
  try {
    signer = await validPoint(content.subarray(0, 65));
    verifyKey = await crypto.subtle.importKey("raw", signer, { name: "ECDSA", namedCurve: "P-256" }, false, ["verify"]);
  } catch {
    throw new SealError("bad signature", "the sender's key in the signature block is not a valid P-256 point");
  }
  const found = fingerprintText(await keyIdOf(signer));
  const ok = await crypto.subtle.verify(
    { name: "ECDSA", hash: "SHA-256" },
    verifyKey,
    content.subarray(65),
    concat(SIGNATURE_PREFIX, transcript.digest()),
  );
  if (!ok) throw new SealError("bad signature", `the sender signature (by ${found}) does not verify`);
  if (expectedSender && !equal(signer, expectedSender)) {
    throw new SealError(
      "bad signature",
      `signed by ${found}, not by the expected ${fingerprintText(await keyIdOf(expectedSender))}`,
    );
  }
  return { sink, fileName, signer };
}

/** The final chunk failed (§4.5 step 7): a file cut at a chunk boundary, or a signed file that lost its
 *  signature block, is "truncated" (and never released); anything else is "tampered". */
async function finalFailure(blob, start, key, counter, signed) {
  const rest = await read(blob, start, Math.min(blob.size, start + SEALED_CHUNK + BLOCK + 1));
  const restLength = blob.size - start;
  if (signed && restLength <= SEALED_CHUNK && (await opens(key, nonce(counter, true), rest))) {
    return new SealError("truncated", "the signature block is missing");
  }
  if (restLength < SEALED_CHUNK) return new SealError("tampered", "the final chunk failed authentication");
  if (await opens(key, nonce(counter, false), rest.subarray(0, SEALED_CHUNK))) {
    return new SealError("truncated", "the file was cut at a chunk boundary; get a complete copy");
  }
  return new SealError("tampered", "the final chunk failed authentication");
}

