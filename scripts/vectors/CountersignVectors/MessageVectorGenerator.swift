import Crypto
import CountersignCrypto
import Foundation

/// Builds the `message_*` scenarios of Vectors/ from fixed seeds and a fixed clock. Everything but the
/// ECDSA signature is reproducible; the signature's 64 bytes are masked when comparing.
package enum MessageVectorGenerator {
    static let alice = VectorGenerator.alice, bob = VectorGenerator.bob, carol = VectorGenerator.carol
    static let created: UInt64 = 1_795_000_000_000

    static func seal(_ text: [UInt8], to recipients: [Identity], seed: String) throws -> [UInt8] {
        var rng = SeededRandom(seed: seed)
        return try MessageEnvelope.seal(text, from: alice, to: recipients.map(\.publicKey), created: created, using: &rng).bytes
    }

    package static func all() throws -> [TestVector] {
        let hello = Array("Hello, Bob. Meet at noon.\n".utf8)
        let basic = try seal(hello, to: [bob], seed: "m basic")
        let typeEnd = 50 + MessageEnvelope.defaultContentType.utf8.count      // recipient count follows
        let stanza = typeEnd + 2
        var v: [TestVector] = []
        func add(_ name: String, _ expect: String, _ bytes: [UInt8], identity: Identity = bob, from: Identity = alice,
                 payload: [UInt8]? = nil, signatureAt: Int? = nil, _ comment: String) {
            let sig = signatureAt ?? basic.count - 64
            v.append(TestVector(name: "message_" + name, expect: expect, identity: identity, from: from.publicKey, payload: payload,
                                comment: comment, bytes: bytes, unreproducible: sig..<sig + 64))
        }
        func edit(_ b: [UInt8], _ change: (inout [UInt8]) -> Void) -> [UInt8] { var c = b; change(&c); return c }
        func resign(_ b: [UInt8]) throws -> [UInt8] { try Seeded.resign(b, as: alice) }

        add("basic", "success", basic, payload: hello, "one recipient, text/plain;charset=utf-8")
        let empty = try seal([], to: [bob], seed: "m empty")
        add("empty", "success", empty, payload: [], signatureAt: empty.count - 64, "empty text: the body is a bare tag")
        let three = try seal(hello, to: [alice, carol, bob], seed: "m three")
        add("three_recipients", "success", three, payload: hello, signatureAt: three.count - 64, "three stanzas sorted by key ID; opened by bob")
        add("not_for_this_key", "not for this key", basic, identity: carol, "sealed to bob, opened by carol")
        add("wrong_sender", "bad signature", basic, from: carol, "signed by alice, the opener expects carol: the sender key ID differs")
        add("rerouted", "bad signature", edit(basic) { $0.replaceSubrange(stanza..<stanza + 16, with: carol.publicKey.fingerprint.bytes) },
            identity: carol, "bob's stanza filed under carol's key ID by the relay")
        add("rerouted_resigned", "tampered",
            try resign(edit(basic) { $0.replaceSubrange(stanza..<stanza + 16, with: carol.publicKey.fingerprint.bytes) }),
            identity: carol, "re-routed and re-signed by the sender: the HPKE aad binds the key ID")
        add("redated", "bad signature", edit(basic) { $0[48] ^= 0x01 }, "creation time moved by 1 ms")
        add("message_id", "bad signature", edit(basic) { $0[30] ^= 0x80 }, "message ID altered")
        add("body_flipped", "bad signature", edit(basic) { $0[basic.count - 70] ^= 0x80 }, "a body byte flipped")
        add("signature_flipped", "bad signature", edit(basic) { $0[basic.count - 1] ^= 0x01 }, "a signature byte flipped")
        add("high_s", "bad signature", edit(basic) { b in
            b.replaceSubrange(b.count - 32..<b.count, with: P256LowS.subtract(P256LowS.order, Array(b.suffix(32))))
        }, "s replaced by q - s: valid ECDSA, but not the canonical low-S encoding")
        add("zero_signature", "bad signature", edit(basic) { b in b.replaceSubrange(b.count - 64..<b.count, with: [UInt8](repeating: 0, count: 64)) },
            "r = s = 0")
        add("body_tag_resigned", "tampered", try resign(edit(basic) { $0[basic.count - 65] ^= 0x01 }),
            "body tag altered and re-signed by the sender: signature holds, decryption fails")
        add("trailing_byte", "malformed", basic + [0], "one byte after the signature")
        add("truncated", "malformed", Array(basic.dropLast(1)), "the signature is one byte short")
        add("truncated_header", "malformed", Array(basic.prefix(stanza + 20)), "ends inside the first stanza")
        add("unknown_version", "unknown version", edit(basic) { $0[8] = 2 }, "version byte 2")
        add("unknown_format", "unknown format", Array("CSEAL\r\n\u{1a}\u{01}".utf8) + Array(basic.dropFirst(9)), "a sealed-file magic")
        add("zero_recipients", "malformed", edit(basic) { $0[typeEnd] = 0; $0[typeEnd + 1] = 0 }, "recipient count 0")
        add("too_many_recipients", "malformed", edit(basic) { $0[typeEnd] = 1; $0[typeEnd + 1] = 1 }, "recipient count 257")
        let s1 = Array(three[stanza..<stanza + 129]), s2 = Array(three[stanza + 129..<stanza + 258])
        add("unsorted_recipients", "malformed", edit(three) { $0.replaceSubrange(stanza..<stanza + 258, with: s2 + s1) },
            signatureAt: three.count - 64, "first two stanzas swapped")
        add("duplicate_recipient", "malformed", edit(three) { $0.replaceSubrange(stanza + 129..<stanza + 258, with: s1) },
            signatureAt: three.count - 64, "the first stanza twice")
        add("content_type_space", "malformed", edit(basic) { $0[54] = 0x20 }, "a space in the content type")
        add("content_type_empty", "malformed", edit(basic) { $0[49] = 0 }, "content type length 0")
        add("body_too_large", "too large", edit(basic) { $0.replaceSubrange(stanza + 129..<stanza + 133, with: [0x00, 0x10, 0x00, 0x11]) },
            "body length 1 MiB + 17")
        add("body_shorter_than_tag", "malformed", edit(basic) { $0.replaceSubrange(stanza + 129..<stanza + 133, with: [0, 0, 0, 15]) },
            "body length 15")
        return v
    }
}
