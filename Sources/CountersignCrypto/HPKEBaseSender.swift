import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// RFC 9180 base-mode single-shot seal and open for DHKEM(P-256, HKDF-SHA256) / HKDF-SHA256 / AES-256-GCM, with the
/// ephemeral key passed in. swift-crypto's `HPKE.Sender` draws its ephemeral key internally, which makes
/// byte-exact vectors impossible. The RFC 9180 vectors pin both directions, and the tests check that
/// swift-crypto's own `HPKE.Recipient` opens what this seals, so it agrees with an implementation we did not write.
enum HPKEBaseSender {
    static let kemSuiteID: [UInt8] = Array("KEM".utf8) + [0x00, 0x10]
    static let hpkeSuiteID: [UInt8] = Array("HPKE".utf8) + [0x00, 0x10, 0x00, 0x01, 0x00, 0x02]
    static let ciphersuite = HPKE.Ciphersuite.P256_SHA256_AES_GCM_256

    /// Returns `(enc, ciphertext)` for one message.
    static func seal(
        _ plaintext: [UInt8],
        to recipient: P256.KeyAgreement.PublicKey,
        info: [UInt8],
        aad: [UInt8],
        ephemeral: P256.KeyAgreement.PrivateKey
    ) throws -> (enc: [UInt8], ciphertext: [UInt8]) {
        let dh = try ephemeral.sharedSecretFromKeyAgreement(with: recipient)
        let enc = Array(ephemeral.publicKey.x963Representation)
        let (key, nonce) = keySchedule(
            dh: dh,
            enc: enc,
            recipientPoint: Array(recipient.x963Representation),
            info: info
        )
        let box = try AES.GCM.seal(plaintext, using: key, nonce: nonce, authenticating: aad)
        return (enc, Array(box.ciphertext) + Array(box.tag))
    }

    /// The recipient side of `seal`. The recipient's point is passed in rather than recomputed from the
    /// private key, which halves the cost of an unwrap. Any failure (invalid `enc`, bad tag) is `nil`.
    static func open(
        _ ciphertext: [UInt8],
        enc: [UInt8],
        with key: P256.KeyAgreement.PrivateKey,
        recipientPoint: [UInt8],
        info: [UInt8],
        aad: [UInt8]
    ) -> [UInt8]? {
        guard enc.count == 65, ciphertext.count >= 16,
            let ephemeral = try? P256.KeyAgreement.PublicKey(x963Representation: enc),
            let dh = try? key.sharedSecretFromKeyAgreement(with: ephemeral)
        else { return nil }
        let (k, nonce) = keySchedule(dh: dh, enc: enc, recipientPoint: recipientPoint, info: info)
        guard
            let box = try? AES.GCM.SealedBox(
                nonce: nonce,
                ciphertext: ciphertext.dropLast(16),
                tag: ciphertext.suffix(16)
            ),
            let pt = try? AES.GCM.open(box, using: k, authenticating: aad)
        else { return nil }
        return Array(pt)
    }

    /// DHKEM ExtractAndExpand, then the base-mode key schedule (RFC 9180 §4.1, §5.1).
    private static func keySchedule(
        dh: SharedSecret,
        enc: [UInt8],
        recipientPoint: [UInt8],
        info: [UInt8]
    ) -> (SymmetricKey, AES.GCM.Nonce) {
        let kemContext = enc + recipientPoint
        let eaePRK = labeledExtract(
            salt: [],
            label: "eae_prk",
            ikm: dh.withUnsafeBytes { Array($0) },
            suite: kemSuiteID
        )
        let sharedSecret = labeledExpand(
            eaePRK,
            label: "shared_secret",
            info: kemContext,
            length: 32,
            suite: kemSuiteID
        )
        let context = info == fileKeyInfo ? fileKeyContext : keyScheduleContext(info: info)
        let secret = labeledExtract(salt: sharedSecret, label: "secret", ikm: [], suite: hpkeSuiteID)
        let key = labeledExpand(secret, label: "key", info: context, length: 32, suite: hpkeSuiteID)
        let nonce = labeledExpand(secret, label: "base_nonce", info: context, length: 12, suite: hpkeSuiteID)
        return (SymmetricKey(data: key), try! AES.GCM.Nonce(data: nonce))
    }

    /// mode || psk_id_hash || info_hash; it depends on `info` alone, so the file-key one is computed once.
    private static func keyScheduleContext(info: [UInt8]) -> [UInt8] {
        let pskIDHash = labeledExtract(salt: [], label: "psk_id_hash", ikm: [], suite: hpkeSuiteID)
        let infoHash = labeledExtract(salt: [], label: "info_hash", ikm: info, suite: hpkeSuiteID)
        return [0x00] + pskIDHash + infoHash
    }

    private static let fileKeyInfo = SealedFileFormat.fileKeyInfo
    private static let fileKeyContext = keyScheduleContext(info: fileKeyInfo)

    private static func labeledExtract(salt: [UInt8], label: String, ikm: [UInt8], suite: [UInt8]) -> [UInt8] {
        let labeled = Array("HPKE-v1".utf8) + suite + Array(label.utf8) + ikm
        return Array(HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: labeled), salt: salt))
    }

    private static func labeledExpand(
        _ prk: [UInt8],
        label: String,
        info: [UInt8],
        length: Int,
        suite: [UInt8]
    ) -> [UInt8] {
        let labeled =
            [UInt8(length >> 8), UInt8(length & 0xff)] + Array("HPKE-v1".utf8) + suite + Array(label.utf8) + info
        let out = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: labeled, outputByteCount: length)
        return out.withUnsafeBytes { Array($0) }
    }
}
