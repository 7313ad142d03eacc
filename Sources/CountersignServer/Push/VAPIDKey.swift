import CountersignAPI
import Crypto
import Foundation

/// The server's VAPID key (RFC 8292): the P-256 key push services know this server by. Made on first start and
/// shared by every node, its private half sealed (AES-256-GCM) under a server secret of its own, so the row
/// alone signs nothing (docs/PROTOCOL.md §2.1). Browsers subscribe with its public half
/// (`applicationServerKey`); each push carries a JWT it signed.
public struct VAPIDKey: Sendable {
    let privateKey: P256.Signing.PrivateKey
    /// How long a push's JWT is valid (RFC 8292 §2: at most 24 hours).
    static let tokenLifetime: TimeInterval = 12 * 3600
    static let sealContext = Array("countersign/v1 vapid key".utf8)

    /// The uncompressed public key (65 bytes), as `PushManager.subscribe` takes it.
    public var publicKey: [UInt8] { Array(privateKey.publicKey.x963Representation) }

    /// The deployment's key: made and sealed by the first node to start, opened by every node.
    static func load(store: any ServerSecretStore, random: any RandomSource) async throws -> VAPIDKey {
        let sealKey = SymmetricKey(data: try await store.serverSecret(name: "vapid-key-seal") { random.bytes(32) })
        let sealed = try await store.serverSecret(name: "vapid-private-key") {
            let scalar = P256.Signing.PrivateKey().rawRepresentation
            // A failure here would store nothing usable: a sealed empty scalar fails to open, said below.
            return (try? AES.GCM.seal(scalar, using: sealKey, authenticating: sealContext).combined.map(Array.init))
                ?? []
        }
        guard let box = try? AES.GCM.SealedBox(combined: sealed),
            let scalar = try? AES.GCM.open(box, using: sealKey, authenticating: sealContext),
            let key = try? P256.Signing.PrivateKey(rawRepresentation: scalar)
        else {
            throw ConfigurationError(
                "the VAPID key in the database does not open with its seal (server secrets vapid-key-seal and vapid-private-key): restore both from the same backup"
            )
        }
        return VAPIDKey(privateKey: key)
    }

    /// `Authorization: vapid t=JWT, k=KEY` (RFC 8292 §3) for a push to a push service: `aud` its origin as
    /// `PushEndpointPolicy` writes it, `exp` 12 hours after `now`, `sub` the contact (`vapid-subject`) when
    /// there is one.
    func authorization(audience origin: String, subject: String?, now: Date) throws -> String {
        var claims: [String: Any] = [
            "aud": origin, "exp": Int(now.addingTimeInterval(Self.tokenLifetime).timeIntervalSince1970),
        ]
        if let subject { claims["sub"] = subject }
        let header = Base64URL(Array(#"{"typ":"JWT","alg":"ES256"}"#.utf8)).text
        let body = Base64URL(Array(try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys]))).text
        let input = header + "." + body
        let signature = try privateKey.signature(for: Array(input.utf8)).rawRepresentation
        return "vapid t=\(input).\(Base64URL(Array(signature)).text), k=\(Base64URL(publicKey).text)"
    }
}
