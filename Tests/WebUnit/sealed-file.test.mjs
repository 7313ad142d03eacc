// sealed-file.js: the Countersign sealed file, version 1 (docs/SPEC.md §4): every countersign_*.txt vector
// and unknown_format.txt the Swift tests run (VectorTests.swift) opened to the same class, and
// SealedFileTests.swift's cases: round trips at the chunk and batch boundaries, recipients, name and
// signature, every byte flipped, truncations, reordered chunks, what reaches the sink, header limits.
import assert from "node:assert/strict";
import test from "node:test";

import { concat, utf8 } from "../../Sources/CountersignWebClient/web/js/bytes.js";
import * as filelock from "../../Sources/CountersignWebClient/web/js/filelock.js";
import { parsePublicKey, spkiOf } from "../../Sources/CountersignWebClient/web/js/pem.js";
import { MESSAGES, SealError } from "../../Sources/CountersignWebClient/web/js/seal-error.js";
import {
  BlobSink,
  CheckSink,
  detect,
  FileSink,
  open,
  readersInUse,
  seal,
} from "../../Sources/CountersignWebClient/web/js/sealed-file.js";
import { generateIdentity } from "../../Sources/CountersignWebClient/web/js/file-keys.js";
import { armor } from "../../Sources/CountersignWebClient/web/js/pem.js";
import { expected, identityOf, outcome, pattern, readVector, vectorNames } from "./support/vectors.mjs";

const CHUNK = 65536;
const SEALED_CHUNK = CHUNK + 16;
const STANZA = 129;
const BLOCK = 145;
const bytesOf = async (blob) => new Uint8Array(await blob.arrayBuffer());

/** A sink that keeps what it was given, to see what was released before a refusal. */
class MemorySink {
  constructor() {
    this.parts = [];
  }
  write(bytes) {
    this.parts.push(bytes.slice());
  }
  get bytes() {
    return concat(...this.parts);
  }
}

const [alice, bob, carol] = await Promise.all([generateIdentity(), generateIdentity(), generateIdentity()]);

const sealBytes = async (plaintext, recipients, options = {}) =>
  bytesOf(await seal(new Blob([plaintext]), { recipients: recipients.map((r) => r.point), ...options }));

/** Opens `bytes` as `who`: the plaintext, or throws the SealError. */
async function openBytes(bytes, who, options = {}) {
  const sink = new MemorySink();
  const result = await open(new Blob([bytes]), { identity: who, sink, ...options });
  return { ...result, plaintext: sink.bytes };
}

const kindOf = async (bytes, who = bob, options = {}) => {
  try {
    await openBytes(bytes, who, options);
    return "opened";
  } catch (error) {
    return error.kind ?? `${error.name}: ${error.message}`;
  }
};

test("every sealed-file vector, and an age file, open to the class the Swift tests expect", async () => {
  const names = [...vectorNames("countersign_"), "unknown_format.txt"];
  assert.ok(names.length >= 26, `${names.length} vectors`);
  const wrong = {};
  for (const name of names) {
    const v = readVector(name);
    const identity = await identityOf(v);
    // As the Files screen does: the format from the first bytes, the sender from `from:`.
    const got = await outcome(async () => {
      if (detect(v.bytes.subarray(0, 8)) === "filelock") return filelock.open(v.bytes, identity);
      const expectedSender = v.from ? await parsePublicKey(armor("PUBLIC KEY", v.from)) : null;
      return (await openBytes(v.bytes, identity, { expectedSender })).plaintext;
    });
    if (got !== expected(v)) wrong[v.name] = { comment: v.comment, got, want: expected(v) };
  }
  assert.deepEqual(wrong, {});
  assert.equal(readersInUse(), 0);
});

test("the vector with a name carries it; the signed vector names its signer", async () => {
  const named = readVector("countersign_three_recipients_name.txt");
  assert.equal((await openBytes(named.bytes, await identityOf(named))).fileName, "hello.txt");
  const signed = readVector("countersign_signed.txt");
  const opened = await openBytes(signed.bytes, await identityOf(signed));
  assert.deepEqual(spkiOf(opened.signer), signed.from);
});

test("detect tells the formats apart by their first bytes", () => {
  assert.equal(detect(utf8("CSEAL\r\n\x1a\x01")), "countersign");
  assert.equal(detect(Uint8Array.of(0, 0, 0, 113, 4)), "filelock");
  assert.equal(detect(utf8("age-encryption.org/v1")), null);
  assert.equal(detect(utf8("CSEAL\r\n")), null);
  assert.equal(detect(new Uint8Array(0)), null);
});

// Around the chunk boundaries (the stream carries a 2-byte name prefix) and the 64-chunk batch.
test("round trips at the chunk and batch boundaries, with the size the format gives (roundTrip)", async () => {
  const sizes = [0, 1, CHUNK - 2, CHUNK - 1, CHUNK, 2 * CHUNK - 2, 2 * CHUNK + 5, 3 * CHUNK + 1];
  sizes.push(64 * CHUNK - 2, 64 * CHUNK - 1);
  for (const size of sizes) {
    const plaintext = pattern(size, size);
    let progress = 0;
    const sealed = await sealBytes(plaintext, [bob], { onProgress: (done, total) => (progress = done / total) });
    const stream = size + 2;
    assert.equal(sealed.length, 60 + STANZA + stream + 16 * Math.ceil(stream / CHUNK), `size ${size}`);
    if (size) assert.equal(progress, 1, `size ${size}`);
    const opened = await openBytes(sealed, bob);
    assert.deepEqual(opened.plaintext, plaintext, `size ${size}`);
    assert.equal(opened.fileName, null);
    assert.equal(opened.signer, null);
  }
  assert.equal(readersInUse(), 0);
});

test("several recipients, a name and a signature (multipleRecipientsNameAndSignature)", async () => {
  const plaintext = utf8("the quarterly numbers");
  const sealed = await sealBytes(plaintext, [alice, bob, carol], { signer: alice, fileName: "q3.xlsx" });
  for (const who of [alice, bob, carol]) {
    const opened = await openBytes(sealed, who, { expectedSender: alice.point });
    assert.deepEqual(opened.plaintext, plaintext);
    assert.equal(opened.fileName, "q3.xlsx");
    assert.deepEqual(opened.signer, alice.point);
  }
  // Without an expected sender the signature is still verified and reported.
  assert.deepEqual((await openBytes(sealed, bob)).signer, alice.point);
});

test("another reader is told whose keys it was sealed to (notForThisKeyNamesTheFingerprints)", async () => {
  const sealed = await sealBytes(Uint8Array.of(1, 2, 3), [alice, bob]);
  const sink = new MemorySink();
  await assert.rejects(open(new Blob([sealed]), { identity: carol, sink }), (e) => {
    assert.equal(e.kind, "not for this key");
    const hexOf = (id) => Buffer.from(id).toString("hex").match(/.{8}/g).join(":");
    for (const who of [alice, bob]) assert.ok(e.message.includes(hexOf(who.keyId)), e.message);
    assert.ok(e.message.endsWith(`your key is ${hexOf(carol.keyId)}`), e.message);
    return true;
  });
  assert.deepEqual(sink.parts, []);
});

test("a demanded sender: unsigned is missing, another signer is a bad signature (signatureDemands)", async () => {
  const unsigned = await sealBytes(Uint8Array.of(1, 2, 3), [bob]);
  const sink = new MemorySink();
  await assert.rejects(open(new Blob([unsigned]), { identity: bob, sink, expectedSender: alice.point }), {
    kind: "signature missing",
  });
  assert.deepEqual(sink.parts, []);
  const byCarol = await sealBytes(Uint8Array.of(1, 2, 3), [bob], { signer: carol });
  assert.equal(await kindOf(byCarol, bob, { expectedSender: alice.point }), "bad signature");
});

test("bytes flipped are refused with their class (everyByteFlipIsRejectedWithItsClass)", async () => {
  for (const signer of [null, alice]) {
    const sealed = await sealBytes(utf8("flip me"), [alice, bob], { signer });
    const headerEnd = 60 + 2 * STANZA;
    const payloadEnd = signer ? sealed.length - BLOCK : sealed.length;
    const classOf = (i) => {
      if (i < 8) return ["unknown format"];
      if (i === 8) return ["unknown version"];
      if (i >= 28 + STANZA && i < 28 + STANZA + 16) return ["not for this key"]; // Bob's key ID
      if (i < headerEnd) return ["header"];
      if (i < payloadEnd) return ["tampered"];
      return ["tampered", "bad signature"];
    };
    // Every byte but the stanzas' enc and wrapped key, of which every ninth (they fail as one field).
    const stanzaBody = (i) => i >= 28 && i < headerEnd - 32 && (i - 28) % STANZA >= 16;
    const wrong = [];
    for (let i = 0; i < sealed.length; i++) {
      if (stanzaBody(i) && i % 9) continue;
      const bad = sealed.slice();
      bad[i] ^= 0x01;
      const kind = await kindOf(bad);
      if (!classOf(i).includes(kind)) wrong.push(`byte ${i}: ${kind}`);
    }
    assert.deepEqual(wrong, [], signer ? "signed" : "unsigned");
  }
  assert.equal(readersInUse(), 0);
});

test("cut at every chunk boundary is truncated; cut in the header is refused (truncationAtEvery...)", async () => {
  for (const signer of [null, alice]) {
    const sealed = await sealBytes(new Uint8Array(3 * CHUNK).fill(7), [bob], { signer });
    const header = 60 + STANZA;
    for (let k = 0; k <= 3; k++) {
      const cut = sealed.subarray(0, header + k * SEALED_CHUNK);
      assert.equal(await kindOf(cut), "truncated", `${k} chunks, signed: ${!!signer}`);
    }
    if (signer) {
      assert.equal(await kindOf(sealed.subarray(0, sealed.length - BLOCK)), "truncated");
      assert.notEqual(await kindOf(sealed.subarray(0, sealed.length - 70)), "opened");
    }
    for (const n of [0, 5, 8, 9, 27, 60, header - 1]) {
      assert.notEqual(await kindOf(sealed.subarray(0, n)), "opened", `${n}`);
    }
    assert.notEqual(await kindOf(sealed.subarray(0, sealed.length - 1)), "opened");
  }
});

test("reordered, duplicated, dropped and extended chunks (reorderedDuplicatedDroppedAndExtendedChunks)", async () => {
  const plaintext = pattern(3 * CHUNK, 3);
  const sealed = await sealBytes(plaintext, [bob]);
  const header = sealed.subarray(0, 60 + STANZA);
  const chunks = [];
  for (let at = header.length; at < sealed.length; at += SEALED_CHUNK) {
    chunks.push(sealed.subarray(at, at + SEALED_CHUNK));
  }
  assert.equal(chunks.length, 4);
  const [c0, c1, c2, c3] = chunks;
  assert.equal(await kindOf(concat(header, c1, c0, c2, c3)), "tampered");
  assert.equal(await kindOf(concat(header, c0, c0, c1, c2, c3)), "tampered");
  assert.equal(await kindOf(concat(header, c0, c2, c3)), "tampered");
  assert.equal(await kindOf(concat(header, c0, c1, c2)), "truncated");
  assert.equal(await kindOf(concat(sealed, Uint8Array.of(0))), "tampered");
  assert.equal(await kindOf(concat(sealed, c3)), "tampered");
  // Only authenticated chunks reach the sink, and only whole ones.
  const released = async (bytes) => {
    const sink = new MemorySink();
    await assert.rejects(open(new Blob([bytes]), { identity: bob, sink }));
    return sink.bytes;
  };
  assert.deepEqual(await released(concat(header, c1, c0, c2, c3)), new Uint8Array(0));
  assert.deepEqual(await released(concat(header, c0, c2, c3)), plaintext.subarray(0, CHUNK - 2));
});

test("chunks are released as they verify, before the signature (verifyReleasesNothingWhile...)", async () => {
  const plaintext = pattern(3 * CHUNK, 5);
  const signed = await sealBytes(plaintext, [bob], { signer: alice });
  const forged = signed.slice();
  forged[forged.length - 1] ^= 1; // the signature block's tag
  const sink = new MemorySink();
  await assert.rejects(open(new Blob([forged]), { identity: bob, sink }), { kind: "tampered" });
  assert.deepEqual(sink.bytes, plaintext, "every chunk was released before the signature failed");
  // A first pass into a CheckSink checks everything and keeps nothing.
  await assert.rejects(open(new Blob([forged]), { identity: bob, sink: new CheckSink() }), { kind: "tampered" });
  const checked = await open(new Blob([signed]), { identity: bob, sink: new CheckSink(), expectedSender: alice.point });
  assert.deepEqual(checked.signer, alice.point);
  assert.equal(await kindOf(signed, bob, { expectedSender: carol.point }), "bad signature");
});

test("a stanza moved under another key ID does not unwrap (stanzaMovedUnderAnotherKeyIDFailsToUnwrap)", async () => {
  const sealed = await sealBytes(Uint8Array.of(9, 9, 9), [alice, bob]);
  const [a, b] = [28, 28 + STANZA];
  const idA = sealed.slice(a, a + 16);
  sealed.set(sealed.slice(b, b + 16), a);
  sealed.set(idA, b);
  await assert.rejects(openBytes(sealed, bob), {
    kind: "header",
    message: "header: the recipient stanza for this key does not unwrap",
  });
});

test("header field limits, read and written (headerFieldLimits)", async () => {
  const message = async (bytes) => {
    try {
      await openBytes(bytes, bob);
      return "opened";
    } catch (error) {
      return error.message;
    }
  };
  const sealed = await sealBytes(Uint8Array.of(1), [bob]);
  const edited = (at, ...values) => {
    const b = sealed.slice();
    b.set(values, at);
    return b;
  };
  assert.equal(await message(edited(26, 0, 0)), "header: recipient count 0 is out of range");
  assert.equal(await message(edited(26, 1, 1)), "header: recipient count 257 is out of range");
  assert.notEqual(await message(edited(26, 0, 2)), "opened");
  assert.equal(await message(edited(9, 2)), "header: unknown flags 0x2");
  assert.equal(await kindOf(edited(8, 2)), "unknown version");
  const refusal = async (recipients, fileName = "") => {
    try {
      await seal(new Blob([]), { recipients, fileName });
      return "sealed";
    } catch (error) {
      return error.kind;
    }
  };
  assert.equal(await refusal(new Array(257).fill(bob.point)), "invalid argument");
  assert.equal(await refusal([]), "invalid argument");
  assert.equal(await refusal([bob.point], "a/b"), "invalid argument");
  assert.equal(await refusal([bob.point], "a\\b"), "invalid argument");
  assert.equal(await refusal([bob.point], "x".repeat(256)), "invalid argument");
  assert.equal(await refusal([bob.point], "é".repeat(128)), "invalid argument", "256 bytes of UTF-8");
  assert.equal(await refusal([bob.point], "x".repeat(255)), "sealed");
  assert.equal(readersInUse(), 0);
});

test("the signature covers the header and stays hidden (signatureCoversTheHeaderAndStaysHidden)", async () => {
  const sealed = await sealBytes(utf8("hi"), [bob], { signer: alice });
  const hex = Buffer.from(sealed).toString("hex");
  assert.ok(!hex.includes(Buffer.from(alice.point).toString("hex")), "the sender's point appears nowhere in clear");
  const unsigned = sealed.slice(0, sealed.length - BLOCK);
  unsigned[9] = 0;
  await assert.rejects(openBytes(unsigned, bob), { message: "header: the header MAC does not verify" });
});

test("a name is read as UTF-8 and a leading U+FEFF stays part of it", async () => {
  for (const name of ["résumé.pdf", "\uFEFFbom.txt", "東京.txt"]) {
    assert.equal((await openBytes(await sealBytes(utf8("x"), [bob], { fileName: name }), bob)).fileName, name);
  }
});

test("an aborted seal or open stops with the signal's reason and leaves no reader", async () => {
  const controller = new AbortController();
  controller.abort(new Error("stopped by the user"));
  const file = new Blob([pattern(3 * CHUNK)]);
  await assert.rejects(seal(file, { recipients: [bob.point], signal: controller.signal }), /stopped by the user/);
  const sealed = await sealBytes(pattern(3 * CHUNK), [bob]);
  await assert.rejects(open(new Blob([sealed]), { identity: bob, signal: controller.signal }), /stopped by the user/);
  assert.equal(readersInUse(), 0);
});

test("BlobSink gives one Blob of everything written, of its type", async () => {
  const sink = new BlobSink("text/plain");
  sink.write(utf8("ab"));
  sink.write(utf8("cd"));
  const blob = sink.blob();
  assert.equal(blob.type, "text/plain");
  assert.equal(await blob.text(), "abcd");
});

test("FileSink writes in 4 MiB pieces, puts the file in place on close, and removes it on abort", async () => {
  const calls = [];
  const writable = {
    write: async (bytes) => calls.push(["write", bytes.length]),
    close: async () => calls.push(["close"]),
    abort: async () => calls.push(["abort"]),
  };
  const handle = { remove: async () => calls.push(["remove"]) };
  const sink = new FileSink({ handle, writable });
  for (let i = 0; i < 65; i++) await sink.write(new Uint8Array(CHUNK));
  assert.deepEqual(calls, [["write", 64 * CHUNK]]);
  await sink.close();
  assert.deepEqual(calls.slice(1), [["write", CHUNK], ["close"]]);
  const aborted = new FileSink({ handle, writable });
  await aborted.write(new Uint8Array(10));
  await aborted.abort();
  assert.deepEqual(calls.slice(3), [["abort"], ["remove"]]);
});

test("SealError carries the spec's class in kind; the common classes have words", () => {
  const e = new SealError("tampered", "chunk 3 failed authentication");
  assert.equal(e.kind, "tampered");
  assert.equal(e.message, "tampered: chunk 3 failed authentication");
  assert.equal(new SealError("truncated").message, "truncated");
  for (const kind of ["unknown format", "unknown version", "tampered", "truncated"]) assert.ok(MESSAGES[kind], kind);
});
