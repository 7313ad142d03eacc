import Crypto
import Foundation
import Testing

@testable import CountersignCrypto

/// Sealing helpers shared by the sealed-file and vector tests.
enum Sealing {
    static func identity(_ seed: String) -> Identity {
        var rng = SeededRandom(seed: seed)
        return Identity.generate(using: &rng)
    }

    static func seal(
        _ plaintext: [UInt8],
        to recipients: [Identity],
        signer: Identity? = nil,
        name: String? = nil,
        seed: String = "seal"
    ) throws -> [UInt8] {
        var rng = SeededRandom(seed: seed)
        let sink = MemorySink()
        try SealedFile.seal(
            from: MemorySource(plaintext, maxRead: 7_777),
            to: sink,
            recipients: recipients.map(\.publicKey),
            signer: signer,
            fileName: name,
            using: &rng
        )
        return sink.bytes
    }

    /// Opens and returns the plaintext, or the error; `written` is what reached the sink either way.
    static func open(
        _ sealed: [UInt8],
        as identity: Identity,
        from sender: PublicKey? = nil
    )
        -> (result: Result<(plaintext: [UInt8], opened: SealedFile.Opened), SealError>, written: [UInt8])
    {
        let sink = MemorySink()
        do {
            let opened = try SealedFile.openReleasingChunksBeforeVerification(
                from: MemorySource(sealed, maxRead: 5_000),
                to: sink,
                identity: identity,
                expectedSender: sender
            )
            return (.success((sink.bytes, opened)), sink.bytes)
        } catch let e as SealError {
            return (.failure(e), sink.bytes)
        } catch {
            Issue.record("unexpected error type \(error)")
            return (.failure(.tampered), sink.bytes)
        }
    }

    static func error(_ sealed: [UInt8], as identity: Identity, from sender: PublicKey? = nil) -> SealError? {
        if case .failure(let e) = open(sealed, as: identity, from: sender).result { return e }
        return nil
    }
}

@Suite struct SealedFileTests {
    let alice = Sealing.identity("alice")
    let bob = Sealing.identity("bob")
    let carol = Sealing.identity("carol")
    static let chunk = SealedFileFormat.chunkSize
    static let sealedChunk = SealedFileFormat.sealedChunkSize

    // Sizes around the chunk boundaries; the stream carries a 2-byte name prefix.
    // Also around the 16-chunk batch that is sealed in parallel.
    @Test(arguments: [
        0, 1, chunk - 2, chunk - 1, chunk, 2 * chunk - 2, 2 * chunk + 5, 3 * chunk + 1,
        16 * chunk - 2, 16 * chunk - 1, 32 * chunk - 2, 33 * chunk + 70_000,
    ])
    func roundTrip(size: Int) throws {
        var rng = SeededRandom(seed: "data \(size)")
        let plaintext = rng.bytes(size)
        let sealed = try Sealing.seal(plaintext, to: [bob])
        let header = 60 + 129
        let stream = size + 2
        let chunks = (stream + Self.chunk - 1) / Self.chunk
        #expect(sealed.count == header + stream + 16 * chunks)
        let (result, _) = Sealing.open(sealed, as: bob)
        #expect(try result.get().plaintext == plaintext)
    }

    @Test func multipleRecipientsNameAndSignature() throws {
        let plaintext = Array("the quarterly numbers".utf8)
        let sealed = try Sealing.seal(plaintext, to: [alice, bob, carol], signer: alice, name: "q3.xlsx")
        for who in [alice, bob, carol] {
            let opened = try Sealing.open(sealed, as: who, from: alice.publicKey).result.get()
            #expect(opened.plaintext == plaintext)
            #expect(opened.opened.fileName == "q3.xlsx")
            #expect(opened.opened.signer == alice.publicKey)
        }
        // Without --from the signature is still verified and reported.
        #expect(try Sealing.open(sealed, as: bob).result.get().opened.signer == alice.publicKey)
    }

    @Test func notForThisKeyNamesTheFingerprints() throws {
        let sealed = try Sealing.seal([1, 2, 3], to: [alice, bob])
        let (result, written) = Sealing.open(sealed, as: carol)
        #expect(written.isEmpty)
        guard case .failure(.notForThisKey(let to, let yours)) = result else {
            Issue.record("\(result)")
            return
        }
        #expect(to == [alice.publicKey.fingerprint, bob.publicKey.fingerprint])
        #expect(yours == carol.publicKey.fingerprint)
    }

    @Test func signatureDemands() throws {
        let unsigned = try Sealing.seal([1, 2, 3], to: [bob])
        #expect(Sealing.error(unsigned, as: bob, from: alice.publicKey) == .signatureMissing)
        #expect(Sealing.open(unsigned, as: bob, from: alice.publicKey).written.isEmpty)
        let byCarol = try Sealing.seal([1, 2, 3], to: [bob], signer: carol)
        #expect(
            Sealing.error(byCarol, as: bob, from: alice.publicKey)
                == .badSignature(expected: alice.publicKey.fingerprint, found: carol.publicKey.fingerprint)
        )
    }

    @Test func everyByteFlipIsRejectedWithItsClass() throws {
        for signer in [nil, alice] {
            let sealed = try Sealing.seal(Array("flip me".utf8), to: [alice, bob], signer: signer)
            let headerEnd = 60 + 2 * 129
            let payloadEnd = signer == nil ? sealed.count : sealed.count - 145
            for i in 0..<sealed.count {
                var bad = sealed
                bad[i] ^= 0x01
                let e = Sealing.error(bad, as: bob)
                let expected: [SealError?]
                switch i {
                case 0..<8: expected = [.unknownFormat]
                case 8: expected = [.unknownVersion(0)]
                case 9..<28: expected = [.header("x")]
                case 28 + 129..<28 + 129 + 16:
                    // Bob's key ID: his stanza is no longer found.
                    expected = [.notForThisKey(sealedTo: [], yours: bob.publicKey.fingerprint)]
                case 28..<headerEnd: expected = [.header("x")]
                case headerEnd..<payloadEnd: expected = [.tampered]
                default: expected = [.tampered, .badSignature(expected: nil, found: nil)]
                }
                guard let e else {
                    Issue.record("flip at \(i) accepted")
                    continue
                }
                #expect(expected.contains { Self.sameClass($0, e) }, "flip at byte \(i) gave \(e)")
            }
        }
    }

    @Test func truncationAtEveryChunkBoundaryAndEveryHeaderByte() throws {
        for signer in [nil, alice] {
            let sealed = try Sealing.seal([UInt8](repeating: 7, count: 3 * Self.chunk), to: [bob], signer: signer)
            let header = 60 + 129
            for k in 0...3 {
                let cut = Array(sealed.prefix(header + k * Self.sealedChunk))
                #expect(Sealing.error(cut, as: bob) == .truncated, "cut after \(k) chunks, signed: \(signer != nil)")
            }
            if signer != nil {
                // The whole signature block dropped, and half of it.
                #expect(Sealing.error(Array(sealed.dropLast(145)), as: bob) == .truncated)
                #expect(Sealing.error(Array(sealed.dropLast(70)), as: bob) != nil)
            }
            for n in [0, 5, 8, 9, 27, 60, header - 1] {
                #expect(Sealing.error(Array(sealed.prefix(n)), as: bob) != nil, "prefix \(n)")
            }
            // One byte short of the end.
            #expect(Sealing.error(Array(sealed.dropLast()), as: bob) != nil)
        }
    }

    @Test func reorderedDuplicatedDroppedAndExtendedChunks() throws {
        var rng = SeededRandom(seed: "chunks")
        let plaintext = rng.bytes(3 * Self.chunk)
        let sealed = try Sealing.seal(plaintext, to: [bob])
        let header = Array(sealed.prefix(189))
        let chunks = stride(from: 189, to: sealed.count, by: Self.sealedChunk).map {
            Array(sealed[$0..<min($0 + Self.sealedChunk, sealed.count)])
        }
        #expect(chunks.count == 4)
        let swapped = header + chunks[1] + chunks[0] + chunks[2] + chunks[3]
        #expect(Sealing.error(swapped, as: bob) == .tampered)
        let duplicated = header + chunks[0] + chunks[0] + chunks[1] + chunks[2] + chunks[3]
        #expect(Sealing.error(duplicated, as: bob) == .tampered)
        let droppedMiddle = header + chunks[0] + chunks[2] + chunks[3]
        #expect(Sealing.error(droppedMiddle, as: bob) == .tampered)
        let droppedLast = header + chunks[0] + chunks[1] + chunks[2]
        #expect(Sealing.error(droppedLast, as: bob) == .truncated)
        #expect(Sealing.error(sealed + [0], as: bob) == .tampered)
        #expect(Sealing.error(sealed + chunks[3], as: bob) == .tampered)
        // Only authenticated chunks reach the sink, and only whole ones.
        let written = Sealing.open(swapped, as: bob).written
        #expect(written.isEmpty)
        let writtenDropped = Sealing.open(droppedMiddle, as: bob).written
        #expect(writtenDropped == Array(plaintext.prefix(Self.chunk - 2)))
    }

    /// The streaming open releases authenticated chunks before the signature is checked, as its name says;
    /// `verify` checks everything and releases nothing, so verify-then-open on a private copy is safe.
    @Test func verifyReleasesNothingWhileStreamingOpenReleasesChunksFirst() throws {
        var rng = SeededRandom(seed: "release")
        let plaintext = rng.bytes(3 * Self.chunk)
        let signed = try Sealing.seal(plaintext, to: [bob], signer: alice)
        var forged = signed
        forged[forged.count - 1] ^= 1  // the signature block's tag
        #expect(throws: SealError.tampered) { try SealedFile.verify(from: MemorySource(forged), identity: bob) }
        let (result, written) = Sealing.open(forged, as: bob)
        #expect(throws: SealError.tampered) { try result.get() }
        #expect(written == plaintext, "every chunk was released before the signature failed")
        // A valid file: verify returns what open would, and writes nowhere.
        #expect(
            try SealedFile.verify(from: MemorySource(signed), identity: bob, expectedSender: alice.publicKey)
                == SealedFile.Opened(fileName: nil, signer: alice.publicKey)
        )
        #expect(
            throws: SealError.badSignature(expected: carol.publicKey.fingerprint, found: alice.publicKey.fingerprint)
        ) {
            try SealedFile.verify(from: MemorySource(signed), identity: bob, expectedSender: carol.publicKey)
        }
    }

    @Test func stanzaMovedUnderAnotherKeyIDFailsToUnwrap() throws {
        var sealed = try Sealing.seal([9, 9, 9], to: [alice, bob])
        // Swap the two key IDs: Bob finds "his" ID on Alice's stanza.
        let a = 28
        let b = 28 + 129
        let idA = Array(sealed[a..<a + 16])
        let idB = Array(sealed[b..<b + 16])
        sealed.replaceSubrange(a..<a + 16, with: idB)
        sealed.replaceSubrange(b..<b + 16, with: idA)
        #expect(Sealing.error(sealed, as: bob) == .header("the recipient stanza for this key does not unwrap"))
    }

    @Test func headerFieldLimits() throws {
        var sealed = try Sealing.seal([1], to: [bob])
        sealed[26] = 0
        sealed[27] = 0
        #expect(Sealing.error(sealed, as: bob) == .header("recipient count 0 is out of range"))
        sealed[26] = 1
        sealed[27] = 1  // 257
        #expect(Sealing.error(sealed, as: bob) == .header("recipient count 257 is out of range"))
        sealed[26] = 0
        sealed[27] = 2  // claims 2, has 1: the MAC is read as a stanza, the file ends early
        #expect(Sealing.error(sealed, as: bob) != nil)
        sealed = try Sealing.seal([1], to: [bob])
        sealed[9] = 0x02
        #expect(Sealing.error(sealed, as: bob) == .header("unknown flags 0x2"))
        sealed[9] = 0x00
        sealed[8] = 2
        #expect(Sealing.error(sealed, as: bob) == .unknownVersion(2))
        let many = [PublicKey](repeating: bob.publicKey, count: 257)
        var rng = SeededRandom(seed: "x")
        #expect(throws: SealError.self) {
            try SealedFile.seal(from: MemorySource([]), to: MemorySink(), recipients: many, using: &rng)
        }
        #expect(throws: SealError.self) {
            try SealedFile.seal(
                from: MemorySource([]),
                to: MemorySink(),
                recipients: [bob.publicKey],
                fileName: "a/b",
                using: &rng
            )
        }
        #expect(throws: SealError.self) {
            try SealedFile.seal(
                from: MemorySource([]),
                to: MemorySink(),
                recipients: [bob.publicKey],
                fileName: String(repeating: "x", count: 256),
                using: &rng
            )
        }
    }

    @Test func signatureCoversTheHeaderAndStaysHidden() throws {
        let sealed = try Sealing.seal(Array("hi".utf8), to: [bob], signer: alice)
        // The sender's point appears nowhere in clear.
        let point = alice.publicKey.point
        #expect(!(0...(sealed.count - 65)).contains { Array(sealed[$0..<$0 + 65]) == point })
        // Clearing the signed flag (and so dropping the signature's protection) breaks the header MAC.
        var unsigned = sealed
        unsigned[9] = 0
        #expect(Sealing.error(Array(unsigned.dropLast(145)), as: bob) == .header("the header MAC does not verify"))
    }

    @Test func concurrentSealAndOpenAgree() async throws {
        let bob = self.bob
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for i in 0..<16 {
                group.addTask {
                    var rng = SeededRandom(seed: "concurrent \(i)")
                    let plaintext = rng.bytes(1000 * i + 70_000)
                    let sealed = try Sealing.seal(plaintext, to: [bob], seed: "c\(i)")
                    return try Sealing.open(sealed, as: bob).result.get().plaintext == plaintext
                }
            }
            for try await ok in group { #expect(ok) }
        }
    }

    static func sameClass(_ a: SealError?, _ b: SealError) -> Bool {
        switch (a, b) {
        case (.unknownFormat?, .unknownFormat), (.unknownVersion?, .unknownVersion), (.header?, .header),
            (.notForThisKey?, .notForThisKey), (.tampered?, .tampered), (.truncated?, .truncated),
            (.signatureMissing?, .signatureMissing), (.badSignature?, .badSignature), (.malformed?, .malformed),
            (.tooLarge?, .tooLarge):
            return true
        default:
            return false
        }
    }
}
