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

    /// Registers client `id`; returns it and its secret (shown once, kept only as its SHA-256) unless public.
    public static func add(
        _ id: String,
        _ draft: Draft,
        database: DatabaseLocation,
        logger: Logger
    ) async throws -> (OIDCClient, secret: String?) {
        try await with(database, logger) { storage in
            var client = OIDCClient(
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
            if before.policy != client.policy || before.allowedUsers != client.allowedUsers
                || before.secretHash != client.secretHash || before.offlineAccess != client.offlineAccess
                || before.pairwise != client.pairwise || before.redirectURIs != client.redirectURIs
                || before.pairing != client.pairing
            {
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
