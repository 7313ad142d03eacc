import Crypto
import Foundation
import Testing

@testable import CountersignCrypto

@Suite struct FileLockTests {
    let bob = Sealing.identity("fl bob")

    @Test func layoutIsFourBigEndianLengthPrefixedChunks() throws {
        var rng = SeededRandom(seed: "fl layout")
        let plaintext = rng.bytes(1000)
        let pkg = try FileLockPackage.seal(plaintext, to: bob.publicKey, using: &rng)
        #expect(pkg.count == plaintext.count + 157)
        #expect(Array(pkg[0..<4]) == [0, 0, 0, 113])
        #expect(pkg[4] == 0x04)  // the wrapped key starts with the ephemeral point
        #expect(Array(pkg[117..<121]) == [0, 0, 0, 12])
        #expect(Array(pkg[133..<137]) == [0, 0, 0x03, 0xe8])
        #expect(Array(pkg[1137..<1141]) == [0, 0, 0, 16])
        #expect(try FileLockPackage.open(pkg, with: bob) == plaintext)
        // The payload is plain AES-256-GCM with no AAD under the unwrapped key.
        let fileKey = try #require(try AppleECIES.open(Array(pkg[4..<117]), with: bob, hash: SHA256.self))
        let box = try AES.GCM.SealedBox(
            nonce: AES.GCM.Nonce(data: pkg[121..<133]),
            ciphertext: pkg[137..<1137],
            tag: pkg[1141...]
        )
        #expect(Array(try AES.GCM.open(box, using: SymmetricKey(data: fileKey))) == plaintext)
    }

    @Test func refusesAboveTheSizeLimitWithoutCrashing() throws {
        var rng = SeededRandom(seed: "fl big")
        let big = [UInt8](repeating: 0, count: FileLockPackage.maxPlaintext + 1)
        #expect(throws: SealError.tooLarge(limit: FileLockPackage.maxPlaintext)) {
            try FileLockPackage.seal(big, to: bob.publicKey, using: &rng)
        }
    }

    @Test func everyTruncationIsMalformed() throws {
        var rng = SeededRandom(seed: "fl cut")
        let pkg = try FileLockPackage.seal(rng.bytes(40), to: bob.publicKey, using: &rng)
        for n in 0..<pkg.count {
            #expect(throws: SealError.self, "prefix \(n)") { try FileLockPackage.open(Array(pkg.prefix(n)), with: bob) }
            do { _ = try FileLockPackage.open(Array(pkg.prefix(n)), with: bob) } catch let e as SealError {
                guard case .malformed = e else {
                    Issue.record("prefix \(n): \(e)")
                    continue
                }
            }
        }
    }
}
