import CountersignAPI
import Crypto
import Foundation
import Logging

/// `countersign-server admin oidc-client …` and `admin oidc-keys rotate`, run on the server machine against
/// the database (docs/SERVER.md, "OpenID Connect clients").
public enum OIDCAdmin {
    /// A client as an administrator describes it; nil fields are left as they are on update.
    public struct Draft: Sendable {
        public var name: String?
        public var redirectURIs: [String]?
        public var postLogoutRedirectURIs: [String]?
        public var backchannelLogoutURI: String??
        public var isPublic: Bool?
        public var firstParty: Bool?
        public var policy: String?
        public var allowedUsers: [String]?
        public var offlineAccess: Bool?
        public var algorithm: String?
        public var pairwise: Bool?
        public var pairing: Bool?
        public init() {}
    }

    /// A client as the configuration file defines it (`oidc-clients`): its draft, and for a confidential one
    /// the SHA-256 of its secret (the file never holds the secret itself).
    public struct Configured: Sendable {
        public var id: String
        public var draft: Draft
        public var secretSHA256: String?
        public init(id: String, draft: Draft, secretSHA256: String?) {
            self.id = id
            self.draft = draft
            self.secretSHA256 = secretSHA256
        }
    }

    /// What applying the configuration file's clients changed.
    public struct Applied: Equatable, Sendable {
        public var added: [String] = []
        public var updated: [String] = []
        public var removed: [String] = []
    }

    /// The client a `Draft` describes, as `add` makes it (not yet stored).
    static func client(_ id: String, _ draft: Draft) throws -> OIDCClient {
        OIDCClient(
            id: id,
            name: draft.name ?? id,
            secretHash: nil,
            redirectURIs: draft.redirectURIs ?? [],
            postLogoutRedirectURIs: draft.postLogoutRedirectURIs ?? [],
            backchannelLogoutURI: draft.backchannelLogoutURI ?? nil,
            firstParty: draft.firstParty ?? false,
            policy: try policy(draft.policy ?? "mfa"),
            allowedUsers: draft.allowedUsers ?? [],
            offlineAccess: draft.offlineAccess ?? false,
            idTokenAlgorithm: try algorithm(draft.algorithm ?? "ES256"),
            pairwise: draft.pairwise ?? false,
            pairing: draft.pairing ?? false,
            createdAt: Date()
        )
    }

    /// Whether going from `before` to `after` changes what the client may have (and so revokes what it holds).
    static func termsChanged(_ before: OIDCClient, _ after: OIDCClient) -> Bool {
        before.policy != after.policy || before.allowedUsers != after.allowedUsers
            || before.secretHash != after.secretHash || before.offlineAccess != after.offlineAccess
            || before.pairwise != after.pairwise || before.redirectURIs != after.redirectURIs
            || before.pairing != after.pairing || (before.firstParty && !after.firstParty)
    }

    /// Makes the stored clients the configuration file defines exactly `configured`: new ones added, changed
    /// ones updated (revoking what they hold when their terms changed, as `update` does), those no longer in
    /// the file removed. Refuses, changing nothing, a file whose clients are invalid, defined twice, or named
    /// like a client an administrator registered. Run at each start (`CountersignServer.run`).
    public static func apply(_ configured: [Configured], storage: any OIDCStore, now: Date) async throws -> Applied {
        var wanted: [OIDCClient] = []
        for c in configured {
            guard !wanted.contains(where: { $0.id == c.id }) else { throw OIDCClientError.definedTwice(c.id) }
            var client = try client(c.id, c.draft)
            switch (c.draft.isPublic == true, c.secretSHA256) {
            case (true, nil): client.secretHash = nil
            case (false, let hash?) where Self.isSecretHash(hash):
                client.secretHash = hash.lowercased()
            default: throw OIDCClientError.invalidSecretHash(c.id)
            }
            client.managed = true
            wanted.append(try client.validated())
        }
        var existing: [String: OIDCClient] = [:]
        for c in try await storage.oidcClients() { existing[c.id] = c }
        for c in wanted where existing[c.id].map({ !$0.managed }) == true {
            throw OIDCClientError.registeredByAdmin(c.id)
        }
        var applied = Applied()
        for var c in wanted {
            if let before = existing[c.id] {
                c.createdAt = before.createdAt
                guard c != before else { continue }
                _ = try await storage.updateOIDCClient(c)
                if termsChanged(before, c) { try await storage.revokeOIDCGrants(clientID: c.id, now: now) }
                applied.updated.append(c.id)
            } else {
                _ = try await storage.addOIDCClient(c)
                applied.added.append(c.id)
            }
        }
        for c in existing.values.sorted(by: { $0.id < $1.id })
        where c.managed && !wanted.contains(where: { $0.id == c.id }) {
            _ = try await storage.removeOIDCClient(id: c.id, now: now)
            applied.removed.append(c.id)
        }
        return applied
    }

    /// 64 ASCII hexadecimal digits, and not the hash of an empty secret.
    static func isSecretHash(_ hash: String) -> Bool {
        hash.utf8.count == 64
            && hash.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0 | 0x20) }
            && hash.lowercased() != TokenHash.hex("")
    }

    /// A new client secret and its SHA-256 (hex), for a client the configuration file defines.
    public static func secretAndHash() -> (secret: String, sha256: String) {
        let secret = newSecret()
        return (secret, TokenHash.hex(secret))
    }

    /// Registers client `id`; returns it and its secret (shown once, kept only as its SHA-256) unless public.
    public static func add(
        _ id: String,
        _ draft: Draft,
        database: DatabaseLocation,
        logger: Logger
    ) async throws -> (OIDCClient, secret: String?) {
        try await with(database, logger) { storage in
            var client = try client(id, draft)
            let secret = draft.isPublic == true ? nil : newSecret()
            client.secretHash = secret.map(TokenHash.hex)
            guard try await storage.addOIDCClient(try client.validated()) else {
                throw OIDCClientError.duplicateClient(id)
            }
            return (client, secret)
        }
    }

    /// Changes what `draft` gives; `newSecret` replaces the secret (printed once). Returns the client and the
    /// new secret if one was made.
    public static func update(
        _ id: String,
        _ draft: Draft,
        newSecret makeSecret: Bool,
        database: DatabaseLocation,
        logger: Logger
    ) async throws -> (OIDCClient, secret: String?) {
        try await with(database, logger) { storage in
            guard var client = try await storage.oidcClient(id: id) else { throw OIDCClientError.unknownClient(id) }
            guard !client.managed else { throw OIDCClientError.managedByConfiguration(id) }
            let before = client
            if let v = draft.name { client.name = v }
            if let v = draft.redirectURIs { client.redirectURIs = v }
            if let v = draft.postLogoutRedirectURIs { client.postLogoutRedirectURIs = v }
            if let v = draft.backchannelLogoutURI { client.backchannelLogoutURI = v }
            if let v = draft.firstParty { client.firstParty = v }
            if let v = draft.policy { client.policy = try policy(v) }
            if let v = draft.allowedUsers { client.allowedUsers = v }
            if let v = draft.offlineAccess { client.offlineAccess = v }
            if let v = draft.algorithm { client.idTokenAlgorithm = try algorithm(v) }
            if let v = draft.pairwise { client.pairwise = v }
            if let v = draft.pairing { client.pairing = v }
            var secret: String?
            if draft.isPublic == true {
                client.secretHash = nil
            } else if makeSecret || (draft.isPublic == false && client.secretHash == nil) {
                secret = newSecret()
                client.secretHash = secret.map(TokenHash.hex)
            }
            guard try await storage.updateOIDCClient(try client.validated()) else {
                throw OIDCClientError.unknownClient(id)
            }
            // What it was given under the old terms ends with them (a tighter policy, fewer users, a new
            // secret, no offline access, another subject).
            if termsChanged(before, client) {
                try await storage.revokeOIDCGrants(clientID: id, now: Date())
            }
            return (client, secret)
        }
    }

    public static func list(database: DatabaseLocation, logger: Logger) async throws -> [OIDCClient] {
        try await with(database, logger) { try await $0.oidcClients() }
    }

    public static func show(_ id: String, database: DatabaseLocation, logger: Logger) async throws -> OIDCClient {
        try await with(database, logger) { storage in
            guard let client = try await storage.oidcClient(id: id) else { throw OIDCClientError.unknownClient(id) }
            return client
        }
    }

    /// Removes the client, its consents, and every token it was given.
    public static func remove(_ id: String, database: DatabaseLocation, logger: Logger) async throws {
        try await with(database, logger) { storage in
            if try await storage.oidcClient(id: id)?.managed == true {
                throw OIDCClientError.managedByConfiguration(id)
            }
            guard try await storage.removeOIDCClient(id: id, now: Date()) else {
                throw OIDCClientError.unknownClient(id)
            }
        }
    }

    /// New signing keys for every algorithm in use; the ones before stay published for two hours.
    public static func rotateKeys(database: DatabaseLocation, logger: Logger) async throws -> [String] {
        try await with(database, logger) { storage in
            let ring = OIDCKeyRing(
                store: storage,
                sealingKey: SymmetricKey(
                    data: try await storage.serverSecret(name: "oidc-key-seal") { SystemRandomSource().bytes(32) }
                ),
                clock: SystemClock(),
                random: SystemRandomSource()
            )
            return try await ring.rotate()
        }
    }

    /// The client in lines a terminal shows (`admin oidc-client show`).
    public static func lines(_ c: OIDCClient) -> [String] {
        [
            "client_id: \(c.id)", "name: \(c.name)",
            "type: \(c.isPublic ? "public (PKCE required, no secret)" : "confidential (client secret)")",
            "redirect URIs: \(c.redirectURIs.joined(separator: " "))",
            "post-logout redirect URIs: \(c.postLogoutRedirectURIs.joined(separator: " "))",
            "back-channel logout: \(c.backchannelLogoutURI ?? "none")",
            "sign-in policy: \(c.policy.rawValue)", "first party (no consent screen): \(c.firstParty ? "yes" : "no")",
            "users: \(c.allowedUsers.isEmpty ? "every account" : c.allowedUsers.joined(separator: " "))",
            "refresh tokens without offline_access: \(c.offlineAccess ? "yes" : "no")",
            "ID token algorithm: \(c.idTokenAlgorithm.rawValue)", "pairwise subject: \(c.pairwise ? "yes" : "no")",
            "pairs authenticators: \(c.pairing ? "yes" : "no")",
            "defined by: \(c.managed ? "the configuration file (oidc-clients)" : "admin oidc-client")",
        ]
    }

    static func newSecret() -> String { "cs_secret_" + Base64URL(SystemRandomSource().bytes(32)).text }

    static func policy(_ text: String) throws(OIDCClientError) -> OIDCClient.Policy {
        guard let p = OIDCClient.Policy(rawValue: text) else { throw .invalidPolicy(text) }
        return p
    }

    static func algorithm(_ text: String) throws(OIDCClientError) -> OIDCClient.Algorithm {
        guard let a = OIDCClient.Algorithm(rawValue: text) else { throw .invalidAlgorithm(text) }
        return a
    }

    private static func with<T: Sendable>(
        _ location: DatabaseLocation,
        _ logger: Logger,
        _ body: (any ServerStorage) async throws -> T
    ) async throws -> T {
        let storage = try await ServerDatabase.open(location, logger: logger)
        do {
            let value = try await body(storage)
            await storage.close()
            return value
        } catch {
            await storage.close()
            throw error
        }
    }
}
