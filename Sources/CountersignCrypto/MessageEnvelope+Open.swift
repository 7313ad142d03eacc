import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What opening an envelope returns: the plaintext and every signed header field, so the caller can
/// refuse replays (a message ID seen before) and stale or future-dated messages by its own clock.
public struct OpenedMessage: Equatable, Sendable {
    public let sender: Fingerprint
    public let recipients: [Fingerprint]
    public let messageID: [UInt8]
    /// Milliseconds since the Unix epoch, on the sender's clock.
    public let created: UInt64
    public let contentType: String
    public let plaintext: [UInt8]

    public var createdDate: Date { Date(timeIntervalSince1970: Double(created) / 1000) }
}

extension MessageEnvelope {
    /// Verifies the signature against `sender`, then finds this identity's stanza and decrypts
    /// (docs/SPEC.md §8.4 steps 3–7). Nothing is decrypted before the signature holds.
    public func open(
        with identity: Identity,
        from sender: PublicKey,
        report: (Step) -> Void = { _ in }
    ) throws -> OpenedMessage {
        let expected = sender.fingerprint
        guard senderKeyID == expected else { throw MessageError.badSignature(expected: expected, found: senderKeyID) }
        let header = self.header
        guard P256LowS.isCanonical(signature),
            let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            sender.signingKey.isValidSignature(ecdsa, for: Self.signedMessage(header: header, body: body))
        else {
            throw MessageError.badSignature(expected: expected, found: nil)
        }
        report(.signatureVerified)
        let mine = identity.publicKey.fingerprint
        guard let stanza = stanzas.first(where: { $0.keyID == mine.bytes }) else {
            throw MessageError.notForThisKey(sealedTo: recipients, yours: mine)
        }
        guard
            let messageKey = HPKEBaseSender.open(
                stanza.wrappedKey,
                enc: stanza.enc,
                with: identity.agreementKey,
                recipientPoint: identity.publicKey.point,
                info: Self.messageKeyInfo,
                aad: messageID + stanza.keyID
            ),
            messageKey.count == 32,
            let box = try? AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 12)),
                ciphertext: body.dropLast(Self.tagSize),
                tag: body.suffix(Self.tagSize)
            ),
            let plaintext = try? AES.GCM.open(
                box,
                using: Self.payloadKey(messageKey, messageID: messageID),
                authenticating: header
            )
        else { throw MessageError.tampered }
        report(.stringDecrypted)
        return OpenedMessage(
            sender: senderKeyID,
            recipients: recipients,
            messageID: messageID,
            created: created,
            contentType: contentType,
            plaintext: Array(plaintext)
        )
    }
}
