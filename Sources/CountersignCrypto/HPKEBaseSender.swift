import Crypto
import Foundation

/// RFC 9180 base-mode single-shot seal for DHKEM(P-256, HKDF-SHA256) / HKDF-SHA256 / AES-256-GCM, with the
/// ephemeral key passed in. swift-crypto's `HPKE.Sender` draws its ephemeral key internally, which makes
/// byte-exact vectors impossible; opening still goes through swift-crypto's `HPKE.Recipient`, so every
/// seal here is checked against an implementation we did not write, and the RFC 9180 vectors pin both.
enum HPKEBaseSender {
    static let kemSuiteID: [UInt8] = Array("KEM".utf8) + [0x00, 0x10]
    static let hpkeSuiteID: [UInt8] = Array("HPKE".utf8) + [0x00, 0x10, 0x00, 0x01, 0x00, 0x02]
    static let ciphersuite = HPKE.Ciphersuite.P256_SHA256_AES_GCM_256

    /// Returns `(enc, ciphertext)` for one message.
    static func seal(_ plaintext: [UInt8], to recipient: P256.KeyAgreement.PublicKey, info: [UInt8], aad: [UInt8],
                     ephemeral: P256.KeyAgreement.PrivateKey) throws -> (enc: [UInt8], ciphertext: [UInt8]) {
        let dh = try ephemeral.sharedSecretFromKeyAgreement(with: recipient)
        let enc = Array(ephemeral.publicKey.x963Representation)
        let kemContext = enc + Array(recipient.x963Representation)
        let eaePRK = labeledExtract(salt: [], label: "eae_prk", ikm: dh.withUnsafeBytes { Array($0) }, suite: kemSuiteID)
        let sharedSecret = labeledExpand(eaePRK, label: "shared_secret", info: kemContext, length: 32, suite: kemSuiteID)

        let pskIDHash = labeledExtract(salt: [], label: "psk_id_hash", ikm: [], suite: hpkeSuiteID)
        let infoHash = labeledExtract(salt: [], label: "info_hash", ikm: info, suite: hpkeSuiteID)
        let context = [0x00] + pskIDHash + infoHash
        let secret = labeledExtract(salt: sharedSecret, label: "secret", ikm: [], suite: hpkeSuiteID)
        let key = labeledExpand(secret, label: "key", info: context, length: 32, suite: hpkeSuiteID)
        let nonce = labeledExpand(secret, label: "base_nonce", info: context, length: 12, suite: hpkeSuiteID)
        let box = try AES.GCM.seal(plaintext, using: SymmetricKey(data: key), nonce: AES.GCM.Nonce(data: nonce),
                                   authenticating: aad)
        return (enc, Array(box.ciphertext) + Array(box.tag))
    }

    private static func labeledExtract(salt: [UInt8], label: String, ikm: [UInt8], suite: [UInt8]) -> [UInt8] {
        let labeled = Array("HPKE-v1".utf8) + suite + Array(label.utf8) + ikm
        return Array(HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: labeled), salt: salt))
    }

    private static func labeledExpand(_ prk: [UInt8], label: String, info: [UInt8], length: Int, suite: [UInt8]) -> [UInt8] {
        let labeled = [UInt8(length >> 8), UInt8(length & 0xff)] + Array("HPKE-v1".utf8) + suite + Array(label.utf8) + info
        let out = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: labeled, outputByteCount: length)
        return out.withUnsafeBytes { Array($0) }
    }

    /// Opens with swift-crypto's recipient; any failure (bad point, bad tag) is `nil`.
    static func open(_ ciphertext: [UInt8], enc: [UInt8], with key: P256.KeyAgreement.PrivateKey,
                     info: [UInt8], aad: [UInt8]) -> [UInt8]? {
        guard var r = try? HPKE.Recipient(privateKey: key, ciphersuite: ciphersuite, info: Data(info),
                                          encapsulatedKey: Data(enc)) else { return nil }
        return (try? r.open(ciphertext, authenticating: aad)).map { Array($0) }
    }
}
