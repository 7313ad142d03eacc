import Crypto
import Foundation
import Testing

@testable import CountersignCrypto

/// docs/SPEC.md §10: a secret sealed to its device's own key opens only with that key and context.
@Suite struct SecretAtRestTests {
    let secret = Array("12345678901234567890".utf8)
    let context = "countersign/v1 authenticator TOTP secret\u{0}device-1"

    @Test func opensWithTheKeyAndContextOnly() throws {
        let me = Identity.generate()
        let other = Identity.generate()
        let sealed = try SecretAtRest.seal(secret, to: me.publicKey, context: context)
        #expect(sealed.count == 1 + 65 + secret.count + 16 && sealed[0] == 1)
        #expect(try SecretAtRest.open(sealed, with: me, context: context) == secret)
        #expect(
            try SecretAtRest.seal(secret, to: me.publicKey, context: context) != sealed,
            "a fresh ephemeral key each time"
        )
        #expect(throws: SecretAtRest.Failure.notOpened) { try SecretAtRest.open(sealed, with: other, context: context) }
        #expect(throws: SecretAtRest.Failure.notOpened) {
            try SecretAtRest.open(sealed, with: me, context: context + "x")
        }
        #expect(throws: SecretAtRest.Failure.notOpened) {
            try SecretAtRest.open(sealed, with: me, context: "countersign/v1 authenticator TOTP secret\u{0}device-2")
        }
    }

    /// Every bit flipped, every truncation, another version: refused.
    @Test func alteredOrTruncatedIsRefused() throws {
        let me = Identity.generate()
        let sealed = try SecretAtRest.seal(secret, to: me.publicKey, context: context)
        for i in 0..<sealed.count * 8 {
            var flipped = sealed
            flipped[i / 8] ^= 1 << UInt8(i % 8)
            #expect(throws: (any Error).self) { try SecretAtRest.open(flipped, with: me, context: context) }
        }
        for n in 0..<sealed.count {
            #expect(throws: (any Error).self) {
                try SecretAtRest.open(Array(sealed.prefix(n)), with: me, context: context)
            }
        }
        var version2 = sealed
        version2[0] = 2
        #expect(throws: SecretAtRest.Failure.malformed) { try SecretAtRest.open(version2, with: me, context: context) }
        #expect(throws: SecretAtRest.Failure.tooLarge) {
            try SecretAtRest.seal([UInt8](repeating: 0, count: 4097), to: me.publicKey, context: context)
        }
    }

    /// The same sealing with a pinned ephemeral key gives the same bytes, and swift-crypto's own HPKE opens it.
    @Test func agreesWithSwiftCryptosHPKE() throws {
        var rng = SeededRandom(seed: "secret at rest key")
        let me = Identity.generate(using: &rng)
        var a = SeededRandom(seed: "secret at rest")
        var b = SeededRandom(seed: "secret at rest")
        let one = try SecretAtRest.seal(secret, to: me.publicKey, context: context, using: &a)
        #expect(try SecretAtRest.seal(secret, to: me.publicKey, context: context, using: &b) == one)
        var recipient = try HPKE.Recipient(
            privateKey: me.agreementKey,
            ciphersuite: .P256_SHA256_AES_GCM_256,
            info: Data("countersign/v1 secret at rest".utf8),
            encapsulatedKey: Data(one[1..<66])
        )
        #expect(try Array(recipient.open(Array(one[66...]), authenticating: Array(context.utf8))) == secret)
    }
}
