import CountersignAPI
import Crypto
import CryptoExtras
import Foundation
import JWTKit
import Synchronization

/// The provider's signing keys (docs/PROTOCOL.md §6.3): one signer per algorithm (ES256 for every client, RS256
/// made when a client first needs it), their private halves sealed in the database under a server secret and
/// bound to their `kid`. `admin oidc-keys rotate` adds new signers; a retired key stays in the JWKS until every
/// token it signed has expired. Every node reads the keys again at most a minute after a rotation.
final class OIDCKeyRing: Sendable {
    struct Loaded: Sendable {
        var at: Date
        var keys: JWTKeyCollection
        /// The signing key of each algorithm.
        var current: [OIDCClient.Algorithm: String]
        /// Every published key's public JWK, oldest first.
        var jwks: [[String: String]]
    }

    static let reloadAfter: TimeInterval = 60
    /// How long a retired key stays published: longer than any ID token lives.
    static let publishedAfterRetirement: TimeInterval = 2 * 3600

    let store: any OIDCStore
    let box: SecretBox
    let clock: any WallClock
    let random: any RandomSource
    private let state = Mutex<Loaded?>(nil)

    init(store: any OIDCStore, sealingKey: SymmetricKey, clock: any WallClock, random: any RandomSource) {
        self.store = store
        self.box = SecretBox(key: sealingKey)
        self.clock = clock
        self.random = random
    }

    /// The keys as stored now, made for `algorithm` first when there is no signer of it.
    func loaded(making algorithm: OIDCClient.Algorithm = .es256) async throws -> Loaded {
        let now = clock.now()
        if let fresh = state.withLock({ $0 }), now.timeIntervalSince(fresh.at) < Self.reloadAfter,
            fresh.current[algorithm] != nil
        {
            return fresh
        }
        var records = try await store.oidcSigningKeys().filter { ($0.publishedUntil ?? .distantFuture) > now }
        if !records.contains(where: { $0.algorithm == algorithm && $0.retiredAt == nil }) {
            try await add(algorithm, now: now)
            records = try await store.oidcSigningKeys().filter { ($0.publishedUntil ?? .distantFuture) > now }
        }
        let loaded = try await load(records, at: now)
        state.withLock { $0 = loaded }
        return loaded
    }

    /// Adds a new signer for every algorithm in use (ES256 always): the ones before retire, still published.
    @discardableResult
    func rotate() async throws -> [String] {
        let now = clock.now()
        let inUse = Set(try await store.oidcSigningKeys().map(\.algorithm)).union([.es256])
        var made: [String] = []
        for algorithm in OIDCClient.Algorithm.allCases where inUse.contains(algorithm) {
            made.append(try await add(algorithm, now: now))
        }
        state.withLock { $0 = nil }
        return made
    }

    @discardableResult
    private func add(_ algorithm: OIDCClient.Algorithm, now: Date) async throws -> String {
        let kid = Base64URL(random.bytes(12)).text
        let secret: [UInt8] =
            switch algorithm {
            case .es256: Array(P256.Signing.PrivateKey().rawRepresentation)
            case .rs256: Array(try _RSA.Signing.PrivateKey(keySize: .bits2048).derRepresentation)
            }
        try await store.rotateOIDCSigningKey(
            OIDCSigningKeyRecord(
                kid: kid,
                algorithm: algorithm,
                sealedPrivateKey: try box.seal(secret, for: kid),
                createdAt: now
            ),
            retiredPublishedUntil: now.addingTimeInterval(Self.publishedAfterRetirement)
        )
        return kid
    }

    private func load(_ records: [OIDCSigningKeyRecord], at now: Date) async throws -> Loaded {
        let keys = JWTKeyCollection()
        var current: [OIDCClient.Algorithm: String] = [:]
        var jwks: [[String: String]] = []
        for record in records {
            let secret = try box.open(record.sealedPrivateKey, for: record.kid)
            let kid = JWKIdentifier(string: record.kid)
            switch record.algorithm {
            case .es256:
                let key = try ES256PrivateKey(backing: P256.Signing.PrivateKey(rawRepresentation: secret))
                await keys.add(ecdsa: key, kid: kid)
                guard let (x, y) = key.publicKey.parameters else { continue }
                jwks.append([
                    "kty": "EC", "crv": "P-256", "x": x, "y": y, "kid": record.kid, "use": "sig", "alg": "ES256",
                ])
            case .rs256:
                let key = try Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(derRepresentation: secret))
                await keys.add(rsa: key, digestAlgorithm: .sha256, kid: kid)
                let (n, e) = try key.publicKey.getKeyPrimitives()
                jwks.append([
                    "kty": "RSA", "n": Base64URL(Array(n)).text, "e": Base64URL(Array(e)).text, "kid": record.kid,
                    "use": "sig", "alg": "RS256",
                ])
            }
            if record.retiredAt == nil { current[record.algorithm] = record.kid }
        }
        return Loaded(at: now, keys: keys, current: current, jwks: jwks)
    }

    /// `payload` signed by the current key of `algorithm`, its `kid` in the header.
    func sign(_ payload: some JWTPayload, algorithm: OIDCClient.Algorithm, type: String = "JWT") async throws -> String
    {
        let loaded = try await loaded(making: algorithm)
        guard let kid = loaded.current[algorithm] else { throw RequestError.serverBusy }
        var header = JWTHeader()
        header.typ = type
        return try await loaded.keys.sign(payload, kid: JWKIdentifier(string: kid), header: header)
    }

    /// The claims of a token this provider signed with a key it still publishes (its `kid` and `alg` must name
    /// one; `none` and HS256 are never keys here). Its own claims are checked by the caller.
    func verify<Payload: JWTPayload>(_ token: String, as: Payload.Type) async throws -> Payload {
        try await loaded().keys.verify(token, as: Payload.self)
    }

    /// The JSON Web Key Set: every key still published, read afresh (a key another node just made signs there
    /// at once, so it must be here at once too; the signer cache is this node's alone).
    func jwks() async throws -> [[String: String]] {
        let now = clock.now()
        let records = try await store.oidcSigningKeys().filter { ($0.publishedUntil ?? .distantFuture) > now }
        if records.isEmpty { return try await loaded().jwks }
        return try await load(records, at: now).jwks
    }
}
