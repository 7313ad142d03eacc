import Crypto
import CryptoExtras

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The PingIdentity demo app's payload, for talking to that app only: the UTF-8 text encrypted with
/// RSA PKCS#1 v1.5 to the recipient, the ciphertext signed with RSA PKCS#1 v1.5 / SHA-256 by the sender,
/// as JSON `{"encryptedString": base64, "signature": base64}`. Weak (RSA-1024, PKCS#1 v1.5 encryption);
/// callers must warn whenever it is used.
public struct PingIdentityPayload: Equatable, Sendable {
    public var encryptedString: [UInt8]
    public var signature: [UInt8]

    /// The steps, in the app's own words, reported as they happen.
    public enum Step: String, Sendable {
        case stringEncrypted = "String encrypted"
        case stringSigned = "String signed"
        case signatureVerified = "Signature verified"
        case stringDecrypted = "String decrypted"
    }

    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        case textTooLong(bytes: Int, limit: Int)
        case signatureNotVerified
        case decryptionFailed
        case malformed(String)
        public var description: String {
            switch self {
            case .textTooLong(let n, let limit):
                return
                    "the text is \(n) bytes; RSA-\((limit + 11) * 8) with PKCS#1 v1.5 carries at most \(limit). Use the default message format, which has no such limit"
            case .signatureNotVerified:
                return "Signature Not Verified: the payload was not signed by the expected sender or was altered"
            case .decryptionFailed: return "Decryption failed: the payload is not for this key, or was altered"
            case .malformed(let why): return "malformed PingIdentity payload: \(why)"
            }
        }
    }

    public init(encryptedString: [UInt8], signature: [UInt8]) {
        self.encryptedString = encryptedString
        self.signature = signature
    }

    /// Encrypt, then sign the ciphertext (the app's order).
    public static func seal(
        _ text: String,
        to recipient: LegacyRSAPublicKey,
        signer: LegacyRSAKey,
        report: (Step) -> Void = { _ in }
    ) throws -> PingIdentityPayload {
        let bytes = Array(text.utf8)
        guard bytes.count <= recipient.maxPlaintext else {
            throw Failure.textTooLong(bytes: bytes.count, limit: recipient.maxPlaintext)
        }
        let encryptor = try _RSA.Encryption.PublicKey(unsafeDERRepresentation: recipient.key.derRepresentation)
        let ciphertext = Array(try encryptor.encrypt(bytes, padding: ._WEAK_AND_INSECURE_PKCS_V1_5))
        report(.stringEncrypted)
        let signature = Array(try signer.key.signature(for: ciphertext, padding: .insecurePKCS1v1_5).rawRepresentation)
        report(.stringSigned)
        return PingIdentityPayload(encryptedString: ciphertext, signature: signature)
    }

    /// Verify the signature first, then decrypt.
    public func open(
        with identity: LegacyRSAKey,
        from sender: LegacyRSAPublicKey,
        report: (Step) -> Void = { _ in }
    ) throws -> String {
        guard
            sender.key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature),
                for: encryptedString,
                padding: .insecurePKCS1v1_5
            )
        else { throw Failure.signatureNotVerified }
        report(.signatureVerified)
        guard let decryptor = try? _RSA.Encryption.PrivateKey(unsafeDERRepresentation: identity.key.derRepresentation),
            let plaintext = try? decryptor.decrypt(encryptedString, padding: ._WEAK_AND_INSECURE_PKCS_V1_5),
            let text = String(data: plaintext, encoding: .utf8)
        else { throw Failure.decryptionFailed }
        report(.stringDecrypted)
        return text
    }

    /// `{"encryptedString":"…","signature":"…"}` with standard base64.
    public var json: String {
        "{\"encryptedString\": \"\(Data(encryptedString).base64EncodedString())\", \"signature\": \"\(Data(signature).base64EncodedString())\"}"
    }

    /// Parses the JSON strictly: exactly the two string fields, canonical base64, at most 64 KiB.
    public init(json text: String) throws {
        guard text.utf8.count <= 65_536 else { throw Failure.malformed("larger than 64 KiB") }
        guard let object = try? JSONDecoder().decode([String: String].self, from: Data(text.utf8)) else {
            throw Failure.malformed("not a JSON object of strings")
        }
        guard Set(object.keys) == ["encryptedString", "signature"] else {
            throw Failure.malformed("expected exactly the fields encryptedString and signature")
        }
        func field(_ name: String) throws -> [UInt8] {
            guard let s = object[name], let d = Data(base64Encoded: s), !d.isEmpty,
                d.base64EncodedString() == s
            else {
                throw Failure.malformed("\(name) is not standard base64")
            }
            return Array(d)
        }
        self.init(encryptedString: try field("encryptedString"), signature: try field("signature"))
    }
}
