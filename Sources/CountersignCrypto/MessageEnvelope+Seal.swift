import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension MessageEnvelope {
    /// The steps of sealing and opening, in the PingIdentity app's words, reported as they happen.
    public enum Step: String, Sendable {
        case keypairCreated = "Keypair created"
        case stringEncrypted = "String encrypted"
        case stringSigned = "String signed"
        case signatureVerified = "Signature verified"
        case stringDecrypted = "String decrypted"
    }

    /// Seals `plaintext` to `recipients` and signs it as `sender` (docs/SPEC.md §8.2). `created` is the
    /// sender's clock in Unix milliseconds and `rng` supplies the message ID, message key and ephemeral
    /// keys, so both are the caller's to pin. Package-only: the body's nonce is fixed because the key is
    /// fresh, so a generator replayed by a caller (a copied seeded generator) would reuse a GCM key and
    /// nonce; tests and the vector generator reach it, applications use the overload that draws from the system.
    package static func seal<R: RandomNumberGenerator>(
        _ plaintext: [UInt8],
        contentType: String = defaultContentType,
        from sender: Identity,
        to recipients: [PublicKey],
        created: UInt64,
        using rng: inout R,
        report: (Step) -> Void = { _ in }
    ) throws -> MessageEnvelope {
        guard !recipients.isEmpty else { throw MessageError.invalidArgument("a message needs at least one recipient") }
        guard recipients.count <= maxRecipients else {
            throw MessageError.invalidArgument(
                "\(recipients.count) recipients; a message carries at most \(maxRecipients)"
            )
        }
        guard plaintext.count <= maxPlaintext else {
            throw MessageError.invalidArgument(
                "the message is \(plaintext.count) bytes; the limit is \(maxPlaintext) (1 MiB). Seal larger content as a file with `countersign seal`"
            )
        }
        let typeBytes = Array(contentType.utf8)
        guard (1...maxContentType).contains(typeBytes.count), typeBytes.allSatisfy(isContentTypeByte) else {
            throw MessageError.invalidArgument(
                "the content type must be 1 to \(maxContentType) printable ASCII characters without spaces"
            )
        }
        let sorted = recipients.sorted { $0.fingerprint.bytes.lexicographicallyPrecedes($1.fingerprint.bytes) }
        for (a, b) in zip(sorted, sorted.dropFirst()) where a.fingerprint == b.fingerprint {
            throw MessageError.invalidArgument("recipient \(a.fingerprint) is named twice")
        }

        let messageID = rng.bytes(16)
        let messageKey = rng.bytes(32)
        var stanzas: [RecipientStanza] = []
        for recipient in sorted {
            let keyID = recipient.fingerprint.bytes
            let ephemeral = P256Scalar.keyAgreementKey(using: &rng)
            // The app's one step per message, however many recipients get an ephemeral key of their own.
            if stanzas.isEmpty { report(.keypairCreated) }
            let (enc, wrapped) = try HPKEBaseSender.seal(
                messageKey,
                to: recipient.agreementKey,
                info: messageKeyInfo,
                aad: messageID + keyID,
                ephemeral: ephemeral
            )
            stanzas.append(RecipientStanza(keyID: keyID, enc: enc, wrappedKey: wrapped))
        }
        // The header includes body_len, which is known before encrypting: plaintext + tag.
        let draft = MessageEnvelope(
            senderKeyID: sender.publicKey.fingerprint,
            messageID: messageID,
            created: created,
            contentType: contentType,
            stanzas: stanzas,
            body: [UInt8](repeating: 0, count: plaintext.count + tagSize),
            signature: []
        )
        let header = draft.header
        let box = try AES.GCM.seal(
            plaintext,
            using: payloadKey(messageKey, messageID: messageID),
            nonce: try AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 12)),
            authenticating: header
        )
        let body = Array(box.ciphertext) + Array(box.tag)
        report(.stringEncrypted)
        let raw = Array(
            try sender.signingKey.signature(for: signedMessage(header: header, body: body)).rawRepresentation
        )
        report(.stringSigned)
        return MessageEnvelope(
            senderKeyID: draft.senderKeyID,
            messageID: messageID,
            created: created,
            contentType: contentType,
            stanzas: stanzas,
            body: body,
            signature: P256LowS.normalize(raw)
        )
    }

    /// Seals with fresh system randomness. `created` is the sender's clock (pass the injected one).
    public static func seal(
        _ plaintext: [UInt8],
        contentType: String = defaultContentType,
        from sender: Identity,
        to recipients: [PublicKey],
        created: Date,
        report: (Step) -> Void = { _ in }
    ) throws -> MessageEnvelope {
        let ms = created.timeIntervalSince1970 * 1000
        guard ms.isFinite, ms >= 0, ms < 9.0e18 else {
            throw MessageError.invalidArgument("the creation time is before 1970 or out of range")
        }
        var rng = SystemRandomNumberGenerator()
        return try seal(
            plaintext,
            contentType: contentType,
            from: sender,
            to: recipients,
            created: UInt64(ms),
            using: &rng,
            report: report
        )
    }

    static func payloadKey(_ messageKey: [UInt8], messageID: [UInt8]) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: messageKey),
            salt: messageID,
            info: payloadInfo,
            outputByteCount: 32
        )
    }

    /// `"countersign/v1 message signature" || 0x00 || SHA-256(header || body)`: what the sender signs.
    static func signedMessage(header: [UInt8], body: [UInt8]) -> [UInt8] {
        var h = SHA256()
        h.update(data: header)
        h.update(data: body)
        return signaturePrefix + Array(h.finalize())
    }

    /// The bytes the signature covers, for checking it with another ECDSA implementation.
    public var signedMessage: [UInt8] { Self.signedMessage(header: header, body: body) }
}
