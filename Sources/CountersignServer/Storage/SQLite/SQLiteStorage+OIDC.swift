import Foundation

/// The OpenID Connect provider's hot path on the direct connections (`DirectOIDCStore`); the rest of
/// `OIDCStore` is the shared SQL (`SQLStores+OIDC.swift`) on the Fluent writer.
extension SQLiteStorage {
    package func oidcClient(id: String) async throws -> OIDCClient? {
        try await quickRead { try DirectOIDCStore.client($0, id: id) }
    }

    package func redeemOIDCCode(hash: String, clientID: String, now: Date) async throws -> OIDCRedemption {
        try await messageAndSignInWriter.write { c in
            try c.writeTransaction { try DirectOIDCStore.redeem(c, hash: hash, clientID: clientID, now: now) }
        }
    }

    package func storeOIDCTokens(_ tokens: [OIDCTokenRecord]) async throws {
        try await messageAndSignInWriter.write { c in try c.writeTransaction { try DirectOIDCStore.insert(c, tokens) } }
    }

    package func rotateOIDCRefreshToken(
        hash: String,
        clientID: String,
        now: Date,
        successors: @escaping @Sendable (OIDCGrant) -> [OIDCTokenRecord]?
    ) async throws -> OIDCRedemption {
        try await messageAndSignInWriter.write { c in
            try c.writeTransaction {
                try DirectOIDCStore.rotate(c, hash: hash, clientID: clientID, now: now, successors: successors)
            }
        }
    }

    package func oidcToken(hash: String, now: Date) async throws -> (OIDCTokenRecord, OIDCGrant)? {
        try await quickRead { try DirectOIDCStore.token($0, hash: hash, now: now) }
    }
}
