import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The statements a device signs (docs/PROTOCOL.md §1): registering its keys to an account, opening a device
/// session, and rotating its keys. Each has its own context string, so no signature counts as another.
public enum DeviceProof {
    public static func registrationMessage(
        challenge: [UInt8],
        accountID: String,
        signingKey: PublicKey,
        encryptionKey: PublicKey
    ) -> [UInt8] {
        framed(
            "countersign/v1 device registration",
            challenge + lv(Array(accountID.utf8)) + lv(signingKey.spkiDER) + lv(encryptionKey.spkiDER)
        )
    }

    public static func sessionMessage(nonce: [UInt8], deviceID: String) -> [UInt8] {
        framed("countersign/v1 device session", nonce + lv(Array(deviceID.utf8)))
    }

    public static func rotationMessage(
        deviceID: String,
        oldSigningKey: PublicKey,
        newSigningKey: PublicKey,
        newEncryptionKey: PublicKey
    ) -> [UInt8] {
        framed(
            "countersign/v1 key rotation",
            lv(Array(deviceID.utf8)) + lv(oldSigningKey.spkiDER) + lv(newSigningKey.spkiDER)
                + lv(newEncryptionKey.spkiDER)
        )
    }

    /// An account's device vouching for a new device of the same account (docs/PROTOCOL.md §1): the voucher
    /// names itself and its key, the account (by username, as contacts know it), the new device and both
    /// its keys, and the time, so that contacts who pinned the voucher can follow the new device.
    public static func vouchMessage(
        username: String,
        voucherDeviceID: String,
        voucherSigningKey: PublicKey,
        deviceID: String,
        signingKey: PublicKey,
        encryptionKey: PublicKey,
        vouchedAt: Int64
    ) -> [UInt8] {
        framed(
            "countersign/v1 device vouch",
            lv(Array(username.utf8)) + lv(Array(voucherDeviceID.utf8)) + lv(voucherSigningKey.spkiDER)
                + lv(Array(deviceID.utf8)) + lv(signingKey.spkiDER) + lv(encryptionKey.spkiDER) + u64(vouchedAt)
        )
    }

    /// Whole seconds since 1970 as 8 bytes, big-endian.
    private static func u64(_ seconds: Int64) -> [UInt8] {
        let bits = UInt64(bitPattern: seconds)
        return (0..<8).map { UInt8(truncatingIfNeeded: bits >> (56 - 8 * $0)) }
    }

    /// A messaging device endorsing an authenticator of the same account as an approver of new devices
    /// (docs/PROTOCOL.md §1.2): so that contacts who pinned the endorser follow what the authenticator vouches.
    public static func endorsementMessage(
        username: String,
        endorserDeviceID: String,
        endorserSigningKey: PublicKey,
        approverDeviceID: String,
        approverSigningKey: PublicKey,
        endorsedAt: Int64
    ) -> [UInt8] {
        framed(
            "countersign/v1 approver endorsement",
            lv(Array(username.utf8)) + lv(Array(endorserDeviceID.utf8)) + lv(endorserSigningKey.spkiDER)
                + lv(Array(approverDeviceID.utf8)) + lv(approverSigningKey.spkiDER) + u64(endorsedAt)
        )
    }

    /// The code a new device shows while it waits to be linked, and its approver shows beside "Is this your
    /// new device?" (docs/PROTOCOL.md §1): six groups of four digits from both of the new device's keys, so
    /// that a server that swapped either key cannot keep the code the person compares.
    public static func linkCode(signingKey: PublicKey, encryptionKey: PublicKey) -> String {
        let digest = Array(
            SHA256.hash(data: framed("countersign/v1 link code", lv(signingKey.spkiDER) + lv(encryptionKey.spkiDER)))
        )
        return (0..<6).map { i -> String in
            let n = (Int(digest[3 * i]) << 16 | Int(digest[3 * i + 1]) << 8 | Int(digest[3 * i + 2])) % 10_000
            let s = String(n)
            return String(repeating: "0", count: 4 - s.count) + s
        }.joined(separator: " ")
    }

    /// A device setting the revocation token of its key gate (docs/SPEC.md §14.5): only the device itself,
    /// by its signing key, so that another session of the account cannot plant a token it knows.
    public static func revocationTokenMessage(deviceID: String, accountID: String, tokenHash: [UInt8]) -> [UInt8] {
        framed(
            "countersign/v1 revocation token",
            lv(Array(deviceID.utf8)) + lv(Array(accountID.utf8)) + lv(tokenHash)
        )
    }

    /// A browser binding a key to its account session, so that a reload can resume it
    /// (docs/PROTOCOL.md §1.1): signed by the key itself (possession), naming the account.
    public static func bindingMessage(accountID: String, key: PublicKey) -> [UInt8] {
        framed("countersign/v1 session binding", lv(Array(accountID.utf8)) + lv(key.spkiDER))
    }

    /// A browser resuming its account session with its bound key (docs/PROTOCOL.md §1.1).
    public static func resumptionMessage(nonce: [UInt8], bindingID: String) -> [UInt8] {
        framed("countersign/v1 session resumption", nonce + lv(Array(bindingID.utf8)))
    }

    /// An authenticator pairing (docs/PROTOCOL.md §3): the pairing key (normalised, as typed) names the account.
    public static func pairingMessage(pairingKey: String, signingKey: PublicKey, encryptionKey: PublicKey) -> [UInt8] {
        framed(
            "countersign/v1 authenticator pairing",
            lv(Array(pairingKey.utf8)) + lv(signingKey.spkiDER) + lv(encryptionKey.spkiDER)
        )
    }

    /// An authenticator's mobile payload for pairing by OpenID Connect (docs/PROTOCOL.md §6.11): it names the
    /// authenticator's new key and proves it holds it, for a short time and for one provider (`issuer`) and
    /// client, so that an ID token can carry a pairing grant for that key alone.
    public static func mobilePayloadMessage(
        signingKey: PublicKey,
        issuedAt: Int64,
        nonce: [UInt8],
        issuer: String,
        clientID: String
    ) -> [UInt8] {
        framed(
            "countersign/v1 mobile payload",
            lv(signingKey.spkiDER) + u64(issuedAt) + lv(nonce) + lv(Array(issuer.utf8)) + lv(Array(clientID.utf8))
        )
    }

    static func lv(_ bytes: [UInt8]) -> [UInt8] {
        precondition(bytes.count <= 0xFFFF)
        return [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
    }

    static func framed(_ context: String, _ content: [UInt8]) -> [UInt8] {
        Array(context.utf8) + [0] + Array(SHA256.hash(data: content))
    }
}

extension Identity {
    /// `r || s`, low S (docs/PROTOCOL.md §1): the one signature encoding verifiers accept.
    public func signature(for message: [UInt8]) throws -> [UInt8] {
        // swift-crypto signs with a fresh random nonce; the low-S form is unique per signature.
        let raw = Array(try signingKey.signature(for: message).rawRepresentation)
        return P256LowS.normalize(raw)
    }
}

extension PublicKey {
    /// True only for a 64-byte, in-range, low-S signature that verifies over `message`.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard P256LowS.isCanonical(signature),
            let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
        else { return false }
        return signingKey.isValidSignature(ecdsa, for: message)
    }
}

extension MessageEnvelope {
    /// Checks the sender signature alone (docs/SPEC.md §8.4 steps 3 and 4), as a relay does before it
    /// stores an envelope; it never needs a private key.
    public func verifySignature(from sender: PublicKey) throws {
        let expected = sender.fingerprint
        guard senderKeyID == expected else { throw MessageError.badSignature(expected: expected, found: senderKeyID) }
        guard sender.isValidSignature(signature, for: Self.signedMessage(header: header, body: body)) else {
            throw MessageError.badSignature(expected: expected, found: nil)
        }
    }
}
