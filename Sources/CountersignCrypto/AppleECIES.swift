import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Apple's `SecKeyAlgorithm.eciesEncryptionCofactorX963SHA256AESGCM` for P-256 keys, the key wrap of
/// FileLock's package (docs/SPEC.md §3). Generic over the KDF hash so that Apple's published SHA-224
/// ciphertexts can check the construction too.
enum AppleECIES {
    static let pointLength = 65
    static let tagLength = 16

    static func seal<H: HashFunction>(
        _ plaintext: [UInt8],
        to recipient: PublicKey,
        hash: H.Type,
        ephemeral: P256.KeyAgreement.PrivateKey
    ) throws -> [UInt8] {
        let e = Array(ephemeral.publicKey.x963Representation)
        let key = try derive(
            ephemeralPoint: e,
            secret: ephemeral.sharedSecretFromKeyAgreement(with: recipient.agreementKey),
            hash: hash
        )
        let box = try AES.GCM.seal(plaintext, using: key, nonce: zeroNonce)
        return e + Array(box.ciphertext) + Array(box.tag)
    }

    /// `nil` when the point is valid but the tag fails (wrong key or altered); throws `invalidPoint` otherwise.
    static func open<H: HashFunction>(_ wrapped: [UInt8], with identity: Identity, hash: H.Type) throws -> [UInt8]? {
        guard wrapped.count > pointLength + tagLength else { return nil }
        let e = Array(wrapped[0..<pointLength])
        let ephemeral = try PublicKey(point: e)
        let secret = try identity.agreementKey.sharedSecretFromKeyAgreement(with: ephemeral.agreementKey)
        let key = derive(ephemeralPoint: e, secret: secret, hash: hash)
        let body = wrapped[pointLength...]
        guard
            let box = try? AES.GCM.SealedBox(
                nonce: zeroNonce,
                ciphertext: body.dropLast(tagLength),
                tag: body.suffix(tagLength)
            ),
            let pt = try? AES.GCM.open(box, using: key)
        else { return nil }
        return Array(pt)
    }

    /// ANSI X9.63 KDF: Hash(Z || u32(1) || sharedInfo), sharedInfo = the ephemeral point; AES-128 key.
    private static func derive<H: HashFunction>(
        ephemeralPoint: [UInt8],
        secret: SharedSecret,
        hash: H.Type
    ) -> SymmetricKey {
        var h = H()
        secret.withUnsafeBytes { h.update(bufferPointer: $0) }
        h.update(data: [0, 0, 0, 1] as [UInt8])
        h.update(data: ephemeralPoint)
        return SymmetricKey(data: Array(h.finalize()).prefix(16))
    }

    // A zero IV is what Apple specifies; it is safe because the key is fresh per ephemeral key.
    private static let zeroNonce = try! AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 16))
}
