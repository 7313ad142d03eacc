// envelope.js: message envelopes, version 1 (docs/SPEC.md §8): every message_*.txt vector the Swift tests
// run (VectorTests.swift) opened to the same class, round trips, and MessageEnvelopeTests.swift's
// adversarial cases (every bit flipped, every truncation, high S, re-routing, re-dating).
import assert from "node:assert/strict";
import test from "node:test";

import { concat, sha256, utf8 } from "../../Sources/CountersignWebClient/web/js/bytes.js";
import { Q, signLowS } from "../../Sources/CountersignWebClient/web/js/device-keys.js";
import { MAX_PLAINTEXT, open, parse, seal } from "../../Sources/CountersignWebClient/web/js/envelope.js";
import { expected, identityOf, keyPair, outcome, readVector, vectorNames } from "./support/vectors.mjs";

test("every message vector opens to the class the Swift tests expect", async () => {
  const names = vectorNames("message_");
  assert.ok(names.length >= 27, `${names.length} message vectors`);
  const wrong = {};
  for (const name of names) {
    const v = readVector(name);
    assert.ok(v.from, `${name} names its sender`);
    const identity = await identityOf(v);
    const reader = { senderSpki: v.from, keyId: identity.keyId, privateKey: identity.agreement, point: identity.point };
    const got = await outcome(async () => (await open(v.bytes, reader)).plaintext);
    if (got !== expected(v)) wrong[v.name] = { comment: v.comment, got, want: expected(v) };
  }
  assert.deepEqual(wrong, {});
});

test("parse reads message_basic's header without keys", () => {
  const v = readVector("message_basic.txt");
  const e = parse(v.bytes);
  assert.equal(e.contentType, "text/plain;charset=utf-8");
  assert.equal(e.stanzas.length, 1);
  assert.equal(e.signature.length, 64);
  assert.equal(e.header.length + e.body.length + 64, v.bytes.length);
  assert.ok(Number.isSafeInteger(e.created));
});

/** Alice, Bob and Carol: a signing key each, and a device encryption key to read with. */
async function people() {
  const person = async () => {
    const signing = await keyPair("ECDSA");
    const encryption = await keyPair("ECDH");
    const keyId = (await sha256(encryption.spki)).subarray(0, 16);
    return {
      signing,
      senderKeyId: (await sha256(signing.spki)).subarray(0, 16),
      recipient: { keyId, point: encryption.point },
      reader: { keyId, privateKey: encryption.privateKey, point: encryption.point },
    };
  };
  return { alice: await person(), bob: await person(), carol: await person() };
}

const sealFrom = (sender, recipients, plaintext, extra = {}) =>
  seal({
    plaintext,
    senderKeyId: sender.senderKeyId,
    signingKey: sender.signing.privateKey,
    recipients: recipients.map((r) => r.recipient),
    ...extra,
  });

const kindOf = async (bytes, reader, from) => {
  try {
    await open(bytes, { senderSpki: from.signing.spki, ...reader.reader });
    return "opened";
  } catch (error) {
    return error.kind ?? `${error.name}: ${error.message}`;
  }
};

test("what seal makes opens for each recipient, with the header it signed", async () => {
  const { alice, bob, carol } = await people();
  for (const text of ["", "Meet at the usual place.", "é".repeat(5000)]) {
    const bytes = await sealFrom(alice, [bob, alice, carol], utf8(text), { created: 1_800_000_000_123 });
    for (const who of [alice, bob, carol]) {
      const opened = await open(bytes, { senderSpki: alice.signing.spki, ...who.reader });
      assert.equal(new TextDecoder().decode(opened.plaintext), text);
      assert.equal(opened.created, 1_800_000_000_123);
      assert.deepEqual(opened.senderKeyId, alice.senderKeyId);
      assert.equal(opened.contentType, "text/plain;charset=utf-8");
    }
    // Stanzas are sorted by key ID, whatever order the recipients came in.
    const ids = parse(bytes).stanzas.map((s) => Buffer.from(s.keyId).toString("hex"));
    assert.deepEqual(ids, [...ids].sort());
  }
});

test("another reader, another sender, a flipped body are refused by their class", async () => {
  const { alice, bob, carol } = await people();
  const bytes = await sealFrom(alice, [bob], utf8("for bob"));
  assert.equal(await kindOf(bytes, carol, alice), "not for this key");
  assert.equal(await kindOf(bytes, bob, carol), "bad signature");
  const flipped = bytes.slice();
  flipped[flipped.length - 70] ^= 1;
  assert.equal(await kindOf(flipped, bob, alice), "bad signature");
});

test("bits flipped are refused by the layer that owns them (everyBitFlipIsRefusedByItsLayer)", async () => {
  const { alice, bob } = await people();
  const bytes = await sealFrom(alice, [bob], utf8("flip me"));
  const typeEnd = 50 + "text/plain;charset=utf-8".length;
  const stanzaEnd = typeEnd + 2 + 129;
  const allowed = (i) => {
    if (i < 8) return ["unknown format"];
    if (i === 8) return ["unknown version"];
    if (i === 49 || (i >= 50 && i < typeEnd)) return ["malformed", "bad signature"];
    if (i >= typeEnd && i < typeEnd + 2) return ["malformed"];
    if (i >= stanzaEnd && i < stanzaEnd + 4) return ["malformed", "too large"];
    return ["bad signature"]; // sender key ID, message ID, time, stanzas, body, signature
  };
  // Every bit where the layers meet (the fixed fields, the content type, the counts and lengths); one bit
  // of every other byte (stanzas, body, signature: all the signature's), the bit moving along, for time.
  const everyBit = (i) => i < typeEnd + 2 || (i >= stanzaEnd && i < stanzaEnd + 4);
  const wrong = [];
  for (let i = 0; i < bytes.length; i++) {
    for (const bit of everyBit(i) ? [0, 1, 2, 3, 4, 5, 6, 7] : [i % 8]) {
      const b = bytes.slice();
      b[i] ^= 1 << bit;
      const kind = await kindOf(b, bob, alice);
      if (!allowed(i).includes(kind)) wrong.push(`byte ${i} bit ${bit}: ${kind}`);
    }
  }
  assert.deepEqual(wrong, []);
});

test("every truncation is unknown format or malformed, and a trailing byte is malformed", async () => {
  const { alice, bob, carol } = await people();
  const bytes = await sealFrom(alice, [bob, carol], utf8("cut me"));
  for (let n = 0; n < bytes.length; n++) {
    const kind = await kindOf(bytes.subarray(0, n), bob, alice);
    assert.ok(kind === (n < 8 ? "unknown format" : "malformed"), `${n}: ${kind}`);
  }
  assert.equal(await kindOf(concat(bytes, Uint8Array.of(0)), bob, alice), "malformed");
});

// highSSignatureIsRefusedThoughECDSAWouldAcceptIt
test("a high-S twin of a valid signature and out-of-range r or s are refused", async () => {
  const { alice, bob } = await people();
  const bytes = await sealFrom(alice, [bob], utf8("low s only"));
  const head = bytes.subarray(0, bytes.length - 64);
  const sig = bytes.subarray(bytes.length - 64);
  const big = (b) => BigInt(`0x${Buffer.from(b).toString("hex")}`);
  const bytes32 = (n) => Uint8Array.from(Buffer.from(n.toString(16).padStart(64, "0"), "hex"));
  const s = big(sig.subarray(32));
  assert.ok(s <= (Q - 1n) / 2n, "seal signs with low S");
  const highS = concat(sig.subarray(0, 32), bytes32(Q - s));
  const signed = concat(utf8("countersign/v1 message signature"), Uint8Array.of(0), await sha256(head));
  const verify = { name: "ECDSA", hash: "SHA-256" };
  assert.ok(await crypto.subtle.verify(verify, alice.signing.publicKey, highS, signed), "the twin is valid ECDSA");
  const zeroS = concat(sig.subarray(0, 32), new Uint8Array(32));
  for (const bad of [highS, new Uint8Array(64), concat(bytes32(Q), sig.subarray(32)), zeroS]) {
    assert.equal(await kindOf(concat(head, bad), bob, alice), "bad signature");
  }
});

test("re-routed, re-dated and re-attributed envelopes fail (reRoutedReDatedOrReattributedEnvelopesFail)", async () => {
  const { alice, bob, carol } = await people();
  const bytes = await sealFrom(alice, [bob], utf8("for bob"));
  const stanzaAt = 50 + "text/plain;charset=utf-8".length + 2;
  const rerouted = bytes.slice();
  rerouted.set(carol.recipient.keyId, stanzaAt);
  assert.equal(await kindOf(rerouted, carol, alice), "bad signature");
  assert.equal(await kindOf(rerouted, bob, alice), "bad signature");
  const redated = bytes.slice();
  redated[48] ^= 1;
  assert.equal(await kindOf(redated, bob, alice), "bad signature");
  const reattributed = bytes.slice();
  reattributed.set(carol.senderKeyId, 9);
  assert.equal(await kindOf(reattributed, bob, carol), "bad signature");
  // Re-signed by the real sender, the re-routed stanza still does not open: the HPKE aad binds the key ID.
  const head = rerouted.subarray(0, rerouted.length - 64);
  const context = concat(utf8("countersign/v1 message signature"), Uint8Array.of(0));
  const resigned = concat(head, await signLowS(alice.signing.privateKey, concat(context, await sha256(head))));
  assert.equal(await kindOf(resigned, carol, alice), "tampered");
});

test("seal refuses what the format cannot carry (sealRefusesWhatTheFormatCannotCarry)", async () => {
  const { alice, bob } = await people();
  const refusal = async (recipients, plaintext = utf8("x")) => {
    try {
      await seal({ plaintext, senderKeyId: alice.senderKeyId, signingKey: alice.signing.privateKey, recipients });
      return "sealed";
    } catch (error) {
      return error.kind;
    }
  };
  assert.equal(await refusal([]), "malformed");
  assert.equal(await refusal([bob.recipient, bob.recipient]), "malformed");
  assert.equal(await refusal([{ keyId: new Uint8Array(15), point: bob.recipient.point }]), "malformed");
  const compressed = { keyId: bob.recipient.keyId, point: bob.recipient.point.subarray(0, 33) };
  assert.equal(await refusal([compressed]), "malformed");
  assert.equal(await refusal([bob.recipient], new Uint8Array(MAX_PLAINTEXT + 1)), "too large");
  const many = [];
  for (let i = 0; i < 257; i++) {
    many.push({ keyId: Uint8Array.of(i >> 8, i & 0xff, ...new Uint8Array(14)), point: bob.recipient.point });
  }
  assert.equal(await refusal(many), "malformed");
  assert.equal(await refusal(many.slice(0, 256)), "sealed");
});

test("the largest text, 1 MiB, seals and opens (emptyAndLargestMessages)", async () => {
  assert.equal(MAX_PLAINTEXT, 1_048_576);
  const { alice, bob } = await people();
  const text = new Uint8Array(MAX_PLAINTEXT).fill(0x61);
  const opened = await open(await sealFrom(alice, [bob], text), { senderSpki: alice.signing.spki, ...bob.reader });
  assert.equal(opened.plaintext.length, MAX_PLAINTEXT);
});
