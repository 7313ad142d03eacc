import Crypto
import CountersignCrypto
import Foundation

/// Builds every scenario of Tests/CountersignCryptoTests/Vectors/*.txt from fixed seeds. Unsigned scenarios
/// are byte-for-byte reproducible; ECDSA signatures draw their nonce inside swift-crypto, so signed ones are not.
package enum VectorGenerator {
    package static let bob = Seeded.identity("vector bob")
    package static let alice = Seeded.identity("vector alice")
    package static let carol = Seeded.identity("vector carol")

    /// Every scenario, sealed-file and message envelope.
    package static func everything() throws -> [TestVector] { try all() + MessageVectorGenerator.all() }

    package static func all() throws -> [TestVector] {
        let hello = Array("Hello, Countersign.\n".utf8)
        var rng = SeededRandom(seed: "vector payload")
        let twoChunks = rng.bytes(SealedFileFormat.chunkSize)   // + 2-byte prefix = 2 chunks
        let basic = try Seeded.seal(hello, to: [bob], seed: "v basic")
        let long = try Seeded.seal(twoChunks, to: [bob], seed: "v long")
        let signed = try Seeded.seal(hello, to: [bob], signer: alice, seed: "v signed")
        var v: [TestVector] = []
        func add(_ name: String, _ expect: String, _ bytes: [UInt8], from: PublicKey? = nil, identity: Identity = bob,
                 payload: [UInt8]? = nil, _ comment: String) {
            v.append(TestVector(name: name, expect: expect, identity: identity, from: from, payload: payload, comment: comment, bytes: bytes))
        }
        func flipped(_ b: [UInt8], _ i: Int) -> [UInt8] { var c = b; c[i] ^= 0x80; return c }

        add("countersign_basic", "success", basic, payload: hello, "one recipient, one chunk, no name, unsigned")
        add("countersign_empty", "success", try Seeded.seal([], to: [bob], seed: "v empty"), payload: [], "empty payload: one chunk holding the 2-byte name prefix")
        add("countersign_two_chunks", "success", long, payload: twoChunks, "65536 bytes + prefix: a full first chunk and a 2-byte final chunk")
        add("countersign_three_recipients_name", "success",
            try Seeded.seal(hello, to: [alice, carol, bob], name: "hello.txt", seed: "v three"), payload: hello,
            "three stanzas, bob's last; carries the name hello.txt")
        add("countersign_signed", "success", signed, from: alice.publicKey, payload: hello, "signed by alice, opened with --from alice")
        add("countersign_signed_wrong_sender", "bad signature", signed, from: carol.publicKey, "signed by alice, --from carol")
        add("countersign_signed_missing_block", "truncated", Array(signed.dropLast(145)), "signature block removed")
        add("countersign_signed_block_flipped", "tampered", flipped(signed, signed.count - 20), "a bit of the signature block flipped")
        add("countersign_unsigned_from", "signature missing", basic, from: alice.publicKey, "unsigned file, --from demands a signature")
        add("countersign_not_for_this_key", "not for this key", basic, identity: carol, "sealed to bob, opened by carol")
        add("countersign_header_mac", "header", flipped(basic, 60 + 129 - 1), "last byte of the header MAC flipped")
        add("countersign_header_salt", "header", flipped(basic, 12), "payload salt changed: the MAC catches it")
        add("countersign_wrapped_key", "header", flipped(basic, 28 + 16 + 65 + 3), "bob's wrapped file key altered")
        var badPoint = basic
        badPoint[28 + 16 + 64] ^= 0x01
        add("countersign_invalid_enc_point", "header", badPoint, "stanza enc is not on the curve")
        add("countersign_unknown_version", "unknown version", { var b = basic; b[8] = 2; return b }(), "version byte 2")
        add("countersign_unknown_flags", "header", { var b = basic; b[9] = 0x80; return b }(), "reserved flag bit set")
        add("countersign_zero_recipients", "header", { var b = basic; b[26] = 0; b[27] = 0; return b }(), "recipient count 0")
        add("countersign_truncated_header", "header", Array(basic.prefix(100)), "file ends inside the stanza")
        add("countersign_header_only", "truncated", Array(basic.prefix(189)), "no payload at all")
        add("countersign_tampered_chunk", "tampered", flipped(basic, 195), "payload byte flipped")
        add("countersign_truncated_boundary", "truncated", Array(long.prefix(189 + SealedFileFormat.sealedChunkSize)),
            "two-chunk file cut after the first chunk: the first chunk is not flagged last")
        add("countersign_truncated_tag", "tampered", Array(long.dropLast(1)), "last byte of the final tag missing")
        add("countersign_trailing_byte", "tampered", long + [0], "one byte after the final chunk")
        let c0 = Array(long[189..<189 + SealedFileFormat.sealedChunkSize]), c1 = Array(long[(189 + SealedFileFormat.sealedChunkSize)...])
        add("countersign_reordered", "tampered", Array(long.prefix(189)) + c1 + c0, "final chunk first")
        add("countersign_last_flag_forged", "truncated", Array(long.prefix(189)) + c0,
            "only the first chunk: it does not open as final, it does as non-final")
        add("unknown_format", "unknown format", Array("age-encryption.org/v1\n".utf8), "an age file is not ours")

        var frng = SeededRandom(seed: "v filelock")
        let pkg = try FileLockPackage.seal(hello, to: bob.publicKey, using: &frng)
        add("filelock_basic", "success", pkg, payload: hello, "FileLock package: 113-byte ECIES key wrap, nonce, ciphertext, tag")
        add("filelock_empty", "success", try FileLockPackage.seal([], to: bob.publicKey, using: &frng), payload: [], "empty file")
        add("filelock_wrong_key", "not for this key", pkg, identity: carol, "sealed to bob, opened by carol")
        add("filelock_trailing", "malformed", pkg + [0], "a byte after the tag (FileLock itself ignores it; we do not)")
        add("filelock_bad_nonce_length", "malformed", { var b = pkg; b[4 + 113 + 3] = 16; return b }(), "nonce length 16")
        add("filelock_oversized_length", "too large", { var b = pkg; b.replaceSubrange(4 + 113 + 4 + 12..<4 + 113 + 4 + 12 + 4, with: [0xff, 0xff, 0xff, 0xff]); return b }(), "ciphertext length 2^32-1")
        add("filelock_short_length", "malformed", Array(pkg.prefix(4 + 113 + 4 + 12 + 2)), "missing length header")
        add("filelock_truncated", "malformed", Array(pkg.dropLast(3)), "tag cut short: chunk length mismatch")
        add("filelock_tampered", "tampered", flipped(pkg, 4 + 113 + 4 + 12 + 4 + 2), "ciphertext byte flipped")
        add("filelock_tag_flipped", "tampered", flipped(pkg, pkg.count - 1), "tag byte flipped")
        add("filelock_invalid_point", "header", { var b = pkg; b[4 + 64] ^= 1; return b }(), "ephemeral point off the curve")
        add("filelock_wrapped_key_flipped", "not for this key", flipped(pkg, 4 + 70), "the key wrap fails to open: indistinguishable from a wrong key")
        return v
    }
}
