import Crypto

/// One recipient's copy of the file key in a sealed file header (docs/SPEC.md §4.1–4.2):
/// the key ID it is filed under and the HPKE encapsulation of the file key.
public struct RecipientStanza: Equatable, Sendable {
    public let keyID: [UInt8]
    public let enc: [UInt8]
    public let wrappedKey: [UInt8]

    var bytes: [UInt8] { keyID + enc + wrappedKey }
}

extension PublicKey {
    /// HPKE-seals `fileKey` to this key; the key ID is bound as the AEAD's associated data. Package-only:
    /// the ephemeral key comes from `rng`, and a replayed generator would reuse it.
    package func wrap<R: RandomNumberGenerator>(fileKey: [UInt8], using rng: inout R) throws -> RecipientStanza {
        let keyID = fingerprint.bytes
        let ephemeral = P256Scalar.keyAgreementKey(using: &rng)
        let (enc, wrapped) = try HPKEBaseSender.seal(
            fileKey,
            to: agreementKey,
            info: SealedFileFormat.fileKeyInfo,
            aad: keyID,
            ephemeral: ephemeral
        )
        return RecipientStanza(keyID: keyID, enc: enc, wrappedKey: wrapped)
    }
}

extension Identity {
    /// The file key, or nil when the stanza does not open with this identity (wrong key or altered).
    public func unwrap(_ stanza: RecipientStanza) -> [UInt8]? {
        guard
            let key = HPKEBaseSender.open(
                stanza.wrappedKey,
                enc: stanza.enc,
                with: agreementKey,
                recipientPoint: publicKey.point,
                info: SealedFileFormat.fileKeyInfo,
                aad: stanza.keyID
            ),
            key.count == 32
        else { return nil }
        return key
    }
}
