import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import JWTKit

/// Signs push challenges ES256 with the server's challenge key and verifies authenticators' answers
/// with their device signing keys (docs/PROTOCOL.md §3), through jwt-kit.
struct ChallengeSigner: Sendable {
    let identity: Identity
    let kid: String
    private let keys: JWTKeyCollection

    init(privateScalar: [UInt8]) async throws {
        identity = try Identity(privateScalar: privateScalar)
        // The key ID is the key's SPEC §2.4 fingerprint: stable, and says which key without a registry.
        kid = Hex.encode(identity.publicKey.fingerprint.bytes)
        keys = JWTKeyCollection()
        await keys.add(
            ecdsa: try ES256PrivateKey(backing: P256.Signing.PrivateKey(rawRepresentation: privateScalar)),
            kid: JWKIdentifier(string: kid)
        )
    }

    /// The public key as RFC 7517 JWKS, for the pairing answer.
    var jwks: ChallengeKeySet {
        let point = identity.publicKey.point  // 0x04 || X || Y
        return ChallengeKeySet(keys: [
            .init(x: Base64URL(Array(point[1..<33])).text, y: Base64URL(Array(point[33..<65])).text, kid: kid)
        ])
    }

    func sign(_ claims: ChallengeClaims) async throws -> String {
        try await keys.sign(Signed(claims: claims), kid: JWKIdentifier(string: kid))
    }

    /// The answer's claims if `token` is an ES256 JWS by the SPKI key `signingKey`; nil otherwise.
    static func verifyAnswer(_ token: String, signingKey spki: [UInt8]) async -> AnswerClaims? {
        guard token.utf8.count <= 4096, let key = try? P256.Signing.PublicKey(derRepresentation: spki),
            let es = try? ES256PublicKey(backing: key)
        else { return nil }
        let collection = JWTKeyCollection()
        await collection.add(ecdsa: es)
        return try? await collection.verify(token, as: Signed<AnswerClaims>.self).claims
    }

    /// A challenge's claims if `token` is signed by this server's key (authenticators check the same way).
    func verifyChallenge(_ token: String) async -> ChallengeClaims? {
        try? await keys.verify(token, as: Signed<ChallengeClaims>.self).claims
    }
}

/// The claims as a jwt-kit payload, with the same JSON. Times are checked by the caller against the
/// injected clock, not here against the system's.
struct Signed<Claims: Codable & Sendable>: JWTPayload {
    var claims: Claims
    init(claims: Claims) { self.claims = claims }
    init(from decoder: any Decoder) throws { claims = try Claims(from: decoder) }
    func encode(to encoder: any Encoder) throws { try claims.encode(to: encoder) }
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
