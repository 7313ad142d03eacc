import Crypto
import Foundation
import Testing

@testable import CountersignCrypto

/// RFC 9180 test vector for the suite the sealed format uses: DHKEM(P-256, HKDF-SHA256), HKDF-SHA256,
/// AES-256-GCM, base mode (from the CFRG vector file, as shipped with swift-crypto).
@Suite struct HPKEVectorTests {
    struct Vector: Decodable {
        let mode: Int, kem_id: Int, kdf_id: Int, aead_id: Int
        let info: String, skRm: String, skEm: String, pkRm: String, enc: String
        let encryptions: [Encryption]
        struct Encryption: Decodable { let aad: String, ct: String, nonce: String, pt: String }
    }

    let vector: Vector = try! JSONDecoder().decode(
        Vector.self,
        from: Data(contentsOf: Fixtures.root.appendingPathComponent("hpke_rfc9180_p256_sha256_aes256gcm.json"))
    )

    @Test func suiteIsTheOneWeUse() {
        #expect(vector.mode == 0 && vector.kem_id == 0x10 && vector.kdf_id == 1 && vector.aead_id == 2)
    }

    @Test func ourSenderReproducesTheVector() throws {
        let ephemeral = try P256.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](hex: vector.skEm))
        let recipient = try P256.KeyAgreement.PublicKey(x963Representation: [UInt8](hex: vector.pkRm))
        let first = vector.encryptions[0]
        let (enc, ct) = try HPKEBaseSender.seal(
            [UInt8](hex: first.pt),
            to: recipient,
            info: [UInt8](hex: vector.info),
            aad: [UInt8](hex: first.aad),
            ephemeral: ephemeral
        )
        #expect(enc.hex == vector.enc)
        #expect(ct.hex == first.ct)
    }

    @Test func swiftCryptoRecipientOpensTheVector() throws {
        let key = try P256.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](hex: vector.skRm))
        var r = try HPKE.Recipient(
            privateKey: key,
            ciphersuite: .P256_SHA256_AES_GCM_256,
            info: Data([UInt8](hex: vector.info)),
            encapsulatedKey: Data([UInt8](hex: vector.enc))
        )
        for e in vector.encryptions {
            let pt = try r.open([UInt8](hex: e.ct), authenticating: [UInt8](hex: e.aad))
            #expect(Array(pt).hex == e.pt)
        }
        // The single-shot opener used for stanzas agrees on the first message and refuses a flipped bit.
        let first = vector.encryptions[0]
        #expect(
            HPKEBaseSender.open(
                [UInt8](hex: first.ct),
                enc: [UInt8](hex: vector.enc),
                with: key,
                recipientPoint: [UInt8](hex: vector.pkRm),
                info: [UInt8](hex: vector.info),
                aad: [UInt8](hex: first.aad)
            )?.hex == first.pt
        )
        var bad = [UInt8](hex: first.ct)
        bad[0] ^= 1
        #expect(
            HPKEBaseSender.open(
                bad,
                enc: [UInt8](hex: vector.enc),
                with: key,
                recipientPoint: [UInt8](hex: vector.pkRm),
                info: [UInt8](hex: vector.info),
                aad: [UInt8](hex: first.aad)
            ) == nil
        )
    }

    @Test func swiftCryptoOpensWhatWeSeal() throws {
        var rng = SeededRandom(seed: "hpke cross")
        for i in 0..<20 {
            let recipient = Identity.generate(using: &rng)
            let ephemeral = P256Scalar.keyAgreementKey(using: &rng)
            let msg = rng.bytes(i * 7)
            let info = rng.bytes(i)
            let aad = rng.bytes(20 - i)
            let (enc, ct) = try HPKEBaseSender.seal(
                msg,
                to: recipient.publicKey.agreementKey,
                info: info,
                aad: aad,
                ephemeral: ephemeral
            )
            var r = try HPKE.Recipient(
                privateKey: recipient.agreementKey,
                ciphersuite: .P256_SHA256_AES_GCM_256,
                info: Data(info),
                encapsulatedKey: Data(enc)
            )
            #expect(Array(try r.open(ct, authenticating: aad)) == msg)
            var s = try HPKE.Sender(
                recipientKey: recipient.publicKey.agreementKey,
                ciphersuite: .P256_SHA256_AES_GCM_256,
                info: Data(info)
            )
            let theirs = try s.seal(msg, authenticating: aad)
            #expect(
                HPKEBaseSender.open(
                    Array(theirs),
                    enc: Array(s.encapsulatedKey),
                    with: recipient.agreementKey,
                    recipientPoint: recipient.publicKey.point,
                    info: info,
                    aad: aad
                ) == msg
            )
        }
    }
}
