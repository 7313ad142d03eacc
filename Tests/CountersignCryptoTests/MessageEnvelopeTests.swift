import Crypto
import Foundation
import Testing

@testable import CountersignCrypto

/// Sealing helpers for message envelopes, with pinned randomness and clock.
enum Messages {
    static let alice = Sealing.identity("message alice")
    static let bob = Sealing.identity("message bob")
    static let carol = Sealing.identity("message carol")
    static let created: UInt64 = 1_795_000_000_123

    static func seal(
        _ text: String,
        to recipients: [Identity],
        from sender: Identity = alice,
        seed: String = "message"
    ) throws -> MessageEnvelope {
        var rng = SeededRandom(seed: seed)
        return try MessageEnvelope.seal(
            Array(text.utf8),
            from: sender,
            to: recipients.map(\.publicKey),
            created: created,
            using: &rng
        )
    }

    /// Re-signs altered bytes as `signer`, so a test reaches the checks after the signature.
    static func resign(_ bytes: [UInt8], as signer: Identity) throws -> [UInt8] {
        let e = try MessageEnvelope(bytes: bytes)
        let sig = Array(try signer.signingKey.signature(for: e.signedMessage).rawRepresentation)
        return Array(bytes.dropLast(64)) + P256LowS.normalize(sig)
    }

    /// Parses and opens; the error, or nil on success.
    static func error(_ bytes: [UInt8], as identity: Identity = bob, from sender: Identity = alice) -> MessageError? {
        do {
            _ = try MessageEnvelope(bytes: bytes).open(with: identity, from: sender.publicKey)
            return nil
        } catch let e as MessageError {
            return e
        } catch {
            Issue.record("unexpected error type \(error)")
            return .tampered
        }
    }
}

@Suite struct MessageEnvelopeTests {
    @Test func roundTripToEachRecipientReturnsTheSignedHeader() throws {
        let e = try Messages.seal("see you at noon", to: [Messages.bob, Messages.carol])
        #expect(try MessageEnvelope(bytes: e.bytes) == e)
        #expect(try MessageEnvelope(armored: e.armored) == e)
        for reader in [Messages.bob, Messages.carol] {
            var steps: [MessageEnvelope.Step] = []
            let opened = try e.open(with: reader, from: Messages.alice.publicKey) { steps.append($0) }
            #expect(steps == [.signatureVerified, .stringDecrypted])
            #expect(String(decoding: opened.plaintext, as: UTF8.self) == "see you at noon")
            #expect(opened.sender == Messages.alice.publicKey.fingerprint)
            #expect(
                Set(opened.recipients) == [Messages.bob.publicKey.fingerprint, Messages.carol.publicKey.fingerprint]
            )
            #expect(opened.created == Messages.created)
            #expect(opened.contentType == "text/plain;charset=utf-8")
            #expect(opened.messageID == e.messageID && opened.messageID.count == 16)
        }
        // Stanzas are sorted by key ID whatever order the recipients were named in.
        let other = try Messages.seal("see you at noon", to: [Messages.carol, Messages.bob])
        #expect(other.recipients == e.recipients)
        #expect(e.recipients == e.recipients.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) })
    }

    @Test func sealReportsStepsAndDrawsEverythingFromTheGivenRandomness() throws {
        var steps: [MessageEnvelope.Step] = []
        var rng = SeededRandom(seed: "steps")
        _ = try MessageEnvelope.seal(
            Array("x".utf8),
            from: Messages.alice,
            to: [Messages.bob.publicKey, Messages.carol.publicKey],
            created: 1,
            using: &rng
        ) { steps.append($0) }
        #expect(steps == [.keypairCreated, .stringEncrypted, .stringSigned], "once per message, not per recipient")
        let a = try Messages.seal("same", to: [Messages.bob])
        let b = try Messages.seal("same", to: [Messages.bob])
        #expect(a.bytes.dropLast(64) == b.bytes.dropLast(64), "all but the ECDSA signature is fixed by the seed")
        let c = try Messages.seal("same", to: [Messages.bob], seed: "other")
        #expect(c.messageID != a.messageID)
    }

    @Test func emptyAndLargestMessages() throws {
        let empty = try Messages.seal("", to: [Messages.bob])
        #expect(try empty.open(with: Messages.bob, from: Messages.alice.publicKey).plaintext == [])
        var rng = SeededRandom(seed: "big")
        let big = rng.bytes(MessageEnvelope.maxPlaintext)
        let e = try MessageEnvelope.seal(
            big,
            from: Messages.alice,
            to: [Messages.bob.publicKey],
            created: 0,
            using: &rng
        )
        #expect(
            try MessageEnvelope(armored: e.armored).open(with: Messages.bob, from: Messages.alice.publicKey).plaintext
                == big
        )
        #expect(throws: MessageError.self) {
            try MessageEnvelope.seal(
                big + [0],
                from: Messages.alice,
                to: [Messages.bob.publicKey],
                created: 0,
                using: &rng
            )
        }
        #expect(e.armored.utf8.count <= MessageEnvelope.maxArmoredSize)
    }

    /// The size limits are exact: the largest envelope (256 recipients, a 127-byte content type, 1 MiB)
    /// is exactly `maxSize` bytes and `maxArmoredSize` characters armored, and it opens.
    @Test func largestEnvelopeMeetsTheLimitsExactly() throws {
        var rng = SeededRandom(seed: "largest")
        let recipients = (0..<255).map { Sealing.identity("largest \($0)").publicKey } + [Messages.bob.publicKey]
        let e = try MessageEnvelope.seal(
            rng.bytes(MessageEnvelope.maxPlaintext),
            contentType: String(repeating: "x", count: 127),
            from: Messages.alice,
            to: recipients,
            created: 0,
            using: &rng
        )
        #expect(e.bytes.count == MessageEnvelope.maxSize)
        #expect(e.armored.utf8.count == MessageEnvelope.maxArmoredSize)
        #expect(
            try MessageEnvelope(armored: e.armored).open(with: Messages.bob, from: Messages.alice.publicKey).plaintext
                .count == MessageEnvelope.maxPlaintext
        )
    }

    @Test func lowSBoundaries() {
        let one = [UInt8](repeating: 0, count: 31) + [1]
        let half = P256LowS.halfOrder
        // (q - 1)/2 + 1 = q - (q - 1)/2, since q is odd.
        let aboveHalf = P256LowS.subtract(P256LowS.order, half)
        let qMinusOne = P256LowS.subtract(P256LowS.order, one)
        #expect(P256LowS.isCanonical(one + half), "s = (q-1)/2 is low")
        #expect(!P256LowS.isCanonical(one + aboveHalf), "s = (q+1)/2 is high")
        #expect(P256LowS.normalize(one + aboveHalf) == one + half)
        #expect(P256LowS.isCanonical(qMinusOne + one), "r = q-1 is in range")
        #expect(!P256LowS.isCanonical(P256LowS.order + one), "r = q is not")
        #expect(!P256LowS.isCanonical(one + one + [0]), "wrong length")
    }

    @Test func sealRefusesWhatTheFormatCannotCarry() {
        var rng = SeededRandom(seed: "refuse")
        let alice = Messages.alice
        let bob = Messages.bob.publicKey
        for (recipients, type) in [
            ([PublicKey](), "text/plain"), ([bob, bob], "text/plain"), ([bob], ""),
            ([bob], "text/plain; charset=utf-8"),
            ([bob], String(repeating: "a", count: 128)), ([bob], "text/plaiñ"),
        ] {
            #expect(throws: MessageError.self, "\(recipients.count) \(type)") {
                try MessageEnvelope.seal([1], contentType: type, from: alice, to: recipients, created: 0, using: &rng)
            }
        }
        let many = (0..<257).map { Sealing.identity("many \($0)").publicKey }
        #expect(throws: MessageError.self) {
            try MessageEnvelope.seal([1], from: alice, to: many, created: 0, using: &rng)
        }
        #expect(throws: Never.self) {
            try MessageEnvelope.seal([1], from: alice, to: Array(many.prefix(256)), created: 0, using: &rng)
        }
    }

    @Test func sealedToBobOpenedByCarolIsNotForThisKey() throws {
        let e = try Messages.seal("for bob", to: [Messages.bob])
        #expect(
            Messages.error(e.bytes, as: Messages.carol)
                == .notForThisKey(
                    sealedTo: [Messages.bob.publicKey.fingerprint],
                    yours: Messages.carol.publicKey.fingerprint
                )
        )
        #expect(
            MessageError.notForThisKey(
                sealedTo: [Messages.bob.publicKey.fingerprint],
                yours: Messages.carol.publicKey.fingerprint
            )
            .description.hasPrefix("not for this key")
        )
    }

    /// Every bit of the envelope flipped, one at a time: none opens, and each fails in the layer that owns the field.
    @Test func everyBitFlipIsRefusedByItsLayer() throws {
        let e = try Messages.seal("flip me", to: [Messages.bob])
        let bytes = e.bytes
        let typeEnd = 50 + e.contentType.utf8.count
        let stanzaEnd = typeEnd + 2 + 129
        for i in 0..<bytes.count {
            for bit in 0..<8 {
                var b = bytes
                b[i] ^= 1 << bit
                guard let error = Messages.error(b) else {
                    Issue.record("byte \(i) bit \(bit) opened")
                    continue
                }
                let ok: Bool
                switch (i, error) {
                case (0..<8, .unknownFormat), (8, .unknownVersion): ok = true
                case (9..<25, .badSignature(let expected?, let found?)): ok = expected != found  // sender key ID
                case (typeEnd..<typeEnd + 2, .malformed), (stanzaEnd..<stanzaEnd + 4, .malformed),
                    (stanzaEnd..<stanzaEnd + 4, .tooLarge):
                    ok = true
                case (49, .malformed), (50..<typeEnd, .malformed): ok = true  // type length, type bytes
                case (typeEnd + 2..<typeEnd + 18, .notForThisKey): ok = false  // must be caught by the signature first
                case (25..., .badSignature(_, nil)): ok = true
                default: ok = false
                }
                #expect(ok, "byte \(i) bit \(bit): \(error)")
            }
        }
    }

    @Test func reRoutedReDatedOrReattributedEnvelopesFail() throws {
        let e = try Messages.seal("for bob", to: [Messages.bob])
        var bytes = e.bytes
        let stanzaAt = 50 + e.contentType.utf8.count + 2
        // The relay files Bob's stanza under Carol's key ID.
        bytes.replaceSubrange(stanzaAt..<stanzaAt + 16, with: Messages.carol.publicKey.fingerprint.bytes)
        #expect(
            Messages.error(bytes, as: Messages.carol)
                == .badSignature(expected: Messages.alice.publicKey.fingerprint, found: nil)
        )
        #expect(
            Messages.error(bytes, as: Messages.bob)
                == .badSignature(expected: Messages.alice.publicKey.fingerprint, found: nil)
        )
        // Re-dated by one millisecond.
        var redated = e.bytes
        redated[48] ^= 1
        #expect(Messages.error(redated) == .badSignature(expected: Messages.alice.publicKey.fingerprint, found: nil))
        // The relay claims Carol sent it: her key does not verify Alice's signature.
        var reattributed = e.bytes
        reattributed.replaceSubrange(9..<25, with: Messages.carol.publicKey.fingerprint.bytes)
        #expect(
            Messages.error(reattributed, from: Messages.carol)
                == .badSignature(expected: Messages.carol.publicKey.fingerprint, found: nil)
        )
        // Opening with the wrong expected sender names both key IDs.
        #expect(
            Messages.error(e.bytes, from: Messages.carol)
                == .badSignature(
                    expected: Messages.carol.publicKey.fingerprint,
                    found: Messages.alice.publicKey.fingerprint
                )
        )
        // A re-routed stanza re-signed by the real sender still does not open: the HPKE aad binds the key ID.
        let resigned = try Messages.resign(bytes, as: Messages.alice)
        #expect(Messages.error(resigned, as: Messages.carol) == .tampered)
    }

    @Test func highSSignatureIsRefusedThoughECDSAWouldAcceptIt() throws {
        let e = try Messages.seal("low s only", to: [Messages.bob])
        #expect(P256LowS.isCanonical(e.signature))
        let highS = Array(e.signature[0..<32]) + P256LowS.subtract(P256LowS.order, Array(e.signature[32...]))
        let ecdsa = try P256.Signing.ECDSASignature(rawRepresentation: highS)
        #expect(
            Messages.alice.publicKey.signingKey.isValidSignature(ecdsa, for: e.signedMessage),
            "the twin signature is valid ECDSA"
        )
        #expect(
            Messages.error(Array(e.bytes.dropLast(64)) + highS)
                == .badSignature(expected: Messages.alice.publicKey.fingerprint, found: nil)
        )
        // Out-of-range r and s.
        for bad in [
            [UInt8](repeating: 0, count: 64), P256LowS.order + Array(e.signature[32...]),
            Array(e.signature[0..<32]) + [UInt8](repeating: 0, count: 32),
        ] {
            #expect(
                Messages.error(Array(e.bytes.dropLast(64)) + bad)
                    == .badSignature(expected: Messages.alice.publicKey.fingerprint, found: nil)
            )
        }
        #expect(P256LowS.normalize(highS) == e.signature)
    }

    @Test func truncationAtEveryLengthAndTrailingBytes() throws {
        let e = try Messages.seal("cut me", to: [Messages.bob, Messages.carol])
        for n in 0..<e.bytes.count {
            let error = Messages.error(Array(e.bytes.prefix(n)))
            #expect(
                error == .unknownFormat || { if case .malformed? = error { return true } else { return false } }(),
                "\(n): \(String(describing: error))"
            )
        }
        #expect(Messages.error(e.bytes + [0]) == .malformed("1 bytes after the signature"))
    }

    @Test func structuralRefusals() throws {
        let e = try Messages.seal("shape", to: [Messages.bob, Messages.carol])
        let t = 50 + e.contentType.utf8.count
        func with(_ edit: (inout [UInt8]) -> Void) -> MessageError? {
            var b = e.bytes
            edit(&b)
            return Messages.error(b)
        }
        func malformed(_ error: MessageError?) -> Bool {
            if case .malformed? = error { return true } else { return false }
        }
        #expect(
            malformed(
                with {
                    $0[t] = 0
                    $0[t + 1] = 0
                }
            ),
            "zero recipients"
        )
        #expect(
            malformed(
                with {
                    $0[t] = 1
                    $0[t + 1] = 1
                }
            ),
            "257 recipients"
        )
        #expect(malformed(with { $0[49] = 0 }), "empty content type")
        #expect(malformed(with { $0[49] = 128 }), "content type over 127")
        #expect(malformed(with { $0[50] = 0x20 }), "space in the content type")
        // Stanzas swapped: same bytes, other order.
        #expect(
            malformed(
                with { b in
                    let s1 = Array(b[t + 2..<t + 2 + 129])
                    let s2 = Array(b[t + 2 + 129..<t + 2 + 258])
                    b.replaceSubrange(t + 2..<t + 2 + 258, with: s2 + s1)
                }
            ),
            "unsorted stanzas"
        )
        #expect(
            malformed(with { b in b.replaceSubrange(t + 2 + 129..<t + 2 + 258, with: Array(b[t + 2..<t + 2 + 129])) }),
            "a key twice"
        )
        let lenAt = t + 2 + 258
        #expect(
            with { $0.replaceSubrange(lenAt..<lenAt + 4, with: [0x00, 0x10, 0x00, 0x11]) }
                == .tooLarge(limit: MessageEnvelope.maxSize)
        )
        #expect(
            with { $0.replaceSubrange(lenAt..<lenAt + 4, with: [0xff, 0xff, 0xff, 0xff]) }
                == .tooLarge(limit: MessageEnvelope.maxSize)
        )
        #expect(
            malformed(with { $0.replaceSubrange(lenAt..<lenAt + 4, with: [0, 0, 0, 15]) }),
            "body shorter than a tag"
        )
    }

    @Test func signedByTheSenderButUndecryptableIsTampered() throws {
        let e = try Messages.seal("broken by the sender", to: [Messages.bob])
        var b = e.bytes
        b[b.count - 64 - 1] ^= 1  // last tag byte of the body
        #expect(Messages.error(try Messages.resign(b, as: Messages.alice)) == .tampered)
        var w = e.bytes
        w[50 + e.contentType.utf8.count + 2 + 16 + 65 + 3] ^= 1  // Bob's wrapped key
        #expect(Messages.error(try Messages.resign(w, as: Messages.alice)) == .tampered)
        var p = e.bytes
        p[50 + e.contentType.utf8.count + 2 + 16 + 64] ^= 1  // enc no longer on the curve
        #expect(Messages.error(try Messages.resign(p, as: Messages.alice)) == .tampered)
    }

    @Test func armorIsStrict() throws {
        let e = try Messages.seal("armored", to: [Messages.bob])
        let a = e.armored
        #expect(
            a.hasPrefix("-----BEGIN COUNTERSIGN MESSAGE-----\n") && a.hasSuffix("\n-----END COUNTERSIGN MESSAGE-----\n")
        )
        #expect(a.split(separator: "\n").dropFirst().dropLast().dropLast().allSatisfy { $0.count == 64 })
        #expect(try MessageEnvelope(armored: "\n  \t" + a + "\n\n") == e)
        func refused(_ text: String) -> MessageError? {
            do {
                _ = try MessageEnvelope(armored: text)
                return nil
            } catch let e as MessageError { return e } catch { return .tampered }
        }
        #expect(
            refused(a.replacingOccurrences(of: "\n", with: "\r\n"))
                == .malformed("CRLF line endings; the armor uses LF only")
        )
        #expect(
            refused("-----BEGIN PGP MESSAGE-----\n" + a.split(separator: "\n").dropFirst().joined(separator: "\n"))
                == .unknownFormat
        )
        #expect(
            refused(String(a.dropLast(10))) == .malformed("missing or damaged -----END COUNTERSIGN MESSAGE----- line")
        )
        let lines = a.split(separator: "\n").map(String.init)
        let joined = lines[1] + lines[2]
        var rewrapped = lines
        rewrapped[1] = String(joined.prefix(76))
        rewrapped[2] = String(joined.dropFirst(76))
        if case .malformed? = refused(rewrapped.joined(separator: "\n")) {
        } else {
            Issue.record("76-column lines accepted")
        }
        // Non-canonical base64: the last character before the padding carries non-zero spare bits. One of
        // three consecutive lengths has padding.
        let padded = try ["armored", "armored!", "armored!!"].map { try Messages.seal($0, to: [Messages.bob]).armored }
            .first { $0.contains("=") }
        var plines = try #require(padded).split(separator: "\n").map(String.init)
        let last = plines.count - 2
        var tail = Array(plines[last])
        let pad = try #require(tail.firstIndex(of: "="))
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        tail[pad - 1] = alphabet[alphabet.firstIndex(of: tail[pad - 1])! | 1]
        plines[last] = String(tail)
        #expect(refused(plines.joined(separator: "\n")) == .malformed("the armor is not canonical standard base64"))
        // A character outside the alphabet inside a body line (not in the armor lines).
        var starred = lines
        starred[1] = "*" + starred[1].dropFirst()
        #expect(refused(starred.joined(separator: "\n")) == .malformed("the armor is not canonical standard base64"))
        #expect(
            refused("-----BEGIN COUNTERSIGN MESSAGE-----\n-----END COUNTERSIGN MESSAGE-----")
                == .malformed("no base64 between the armor lines")
        )
        #expect(
            refused(String(repeating: " ", count: MessageEnvelope.maxArmoredSize + 5000))
                == .tooLarge(limit: MessageEnvelope.maxSize)
        )
    }
}
