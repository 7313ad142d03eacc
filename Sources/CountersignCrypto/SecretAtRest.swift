import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A small secret a device keeps on disk beside its key file, sealed to that key's own public key
/// (docs/SPEC.md §10): whoever cannot unlock the key file cannot read the secret. HPKE base mode, as
/// message stanzas use it, with its own `info` so nothing sealed for one purpose opens as another, and
/// the caller's `context` (what the secret is and whose) as the associated data, so a sealed secret
/// moved into another file or field does not open there.
public enum SecretAtRest {
    /// `version (1) || enc (65) || ciphertext || tag (16)`.
    static let version: UInt8 = 0x01
    static let info = Array("countersign/v1 secret at rest".utf8)
    /// Secrets at rest are keys and tokens, never bulk data.
    public static let maxSecret = 4096

    /// Why a sealed secret did not open.
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// Too short, too long, or an unknown version byte: not a sealed secret of this version.
        case malformed
        /// Sealed to another key or for another context, or altered.
        case notOpened
        /// More than `maxSecret` bytes given to seal.
        case tooLarge

        public var description: String {
            switch self {
            case .malformed: "not a sealed secret (wrong length or unknown version)"
            case .notOpened: "the sealed secret does not open with this key (another key, another context, or altered)"
            case .tooLarge: "a secret at rest is at most \(SecretAtRest.maxSecret) bytes"
            }
        }
    }

    /// Seals with an ephemeral key from `rng`. Package-only: a replayed generator would reuse the
    /// ephemeral key (and so the AEAD key and nonce) for two secrets.
    package static func seal<R: RandomNumberGenerator>(
        _ secret: [UInt8],
        to key: PublicKey,
        context: String,
        using rng: inout R
    ) throws -> [UInt8] {
        guard secret.count <= maxSecret else { throw Failure.tooLarge }
        let ephemeral = P256Scalar.keyAgreementKey(using: &rng)
        let (enc, ciphertext) = try HPKEBaseSender.seal(
            secret,
            to: key.agreementKey,
            info: info,
            aad: Array(context.utf8),
            ephemeral: ephemeral
        )
        return [version] + enc + ciphertext
    }

    /// Seals `secret` to `key` (normally the device's own public key) for `context`.
    public static func seal(_ secret: [UInt8], to key: PublicKey, context: String) throws -> [UInt8] {
        var rng = SystemRandomNumberGenerator()
        return try seal(secret, to: key, context: context, using: &rng)
    }

    /// Opens what `seal` made for the same key and context.
    public static func open(_ sealed: [UInt8], with identity: Identity, context: String) throws -> [UInt8] {
        guard sealed.count >= 1 + 65 + 16, sealed.count <= 1 + 65 + maxSecret + 16, sealed[0] == version else {
            throw Failure.malformed
        }
        let enc = Array(sealed[1..<66])
        guard
            let secret = HPKEBaseSender.open(
                Array(sealed[66...]),
                enc: enc,
                with: identity.agreementKey,
                recipientPoint: identity.publicKey.point,
                info: info,
                aad: Array(context.utf8)
            )
        else { throw Failure.notOpened }
        return secret
    }
}
