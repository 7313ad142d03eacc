import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `clientDataJSON` as the browser made it (docs/SPEC.md §13.4). `challenge` and `origin` stay text: the
/// ceremony compares them with what it expects, byte for byte, so a non-canonical form never matches.
public struct ClientData: Sendable {
    public static let maxSize = 4096

    public let type: String
    public let challenge: String
    public let origin: String
    public let crossOrigin: Bool
    public let topOrigin: String?
    /// SHA-256 of the bytes as sent, which the authenticator signed.
    public let hash: [UInt8]

    public init(parsing bytes: [UInt8]) throws(WebAuthnError) {
        guard bytes.count <= Self.maxSize else { throw .malformed("client data over \(Self.maxSize) bytes") }
        struct Fields: Decodable {
            var type: String
            var challenge: String
            var origin: String
            var crossOrigin: Bool?
            var topOrigin: String?
        }
        let fields: Fields
        do {
            fields = try JSONDecoder().decode(Fields.self, from: Data(bytes))
        } catch {
            throw .malformed("the client data is not a JSON object with string type, challenge and origin")
        }
        type = fields.type
        challenge = fields.challenge
        origin = fields.origin
        crossOrigin = fields.crossOrigin ?? false
        topOrigin = fields.topOrigin
        hash = Array(SHA256.hash(data: bytes))
    }
}
