import Foundation

/// The OpenID Connect provider's hot path on the direct connections (`SQLiteStorage+OIDC.swift` runs them):
/// a client read and a token read on the caller's thread, a code's redemption and a refresh token's rotation
/// in the direct writer's group commits. Through Fluent each of these took several thread hand-offs per
/// statement, which were most of a code exchange's cost (docs/BENCHMARKS.md, bench-oidc). The SQL and its
/// rules are `SQLStores+OIDC.swift`'s, which PostgreSQL and the rest of the provider's storage use.
enum DirectOIDCStore {
    static let clientColumns = """
        id, name, secret_hash, redirect_uris, post_logout_redirect_uris, backchannel_logout_uri, first_party, policy,
        allowed_users, offline_access, id_token_alg, pairwise, pairing, managed, created_at
        """
    static let clientByID = "SELECT \(clientColumns) FROM oidc_clients WHERE id = ?1"
    static let grantColumns = """
        id, client_id, account_id, scope, session_id, auth_time, amr, nonce, created_at, revoked_at, pairing_payload,
        pairing_key
        """
    static let grantByID = "SELECT \(grantColumns) FROM oidc_grants WHERE id = ?1"
    static let redeemCode = """
        UPDATE oidc_codes SET redeemed_at = ?2 WHERE code_hash = ?1 AND redeemed_at IS NULL
        RETURNING grant_id, redirect_uri, code_challenge, expires_at
        """
    static let spentCode = """
        SELECT c.grant_id FROM oidc_codes c JOIN oidc_grants g ON g.id = c.grant_id
        WHERE c.code_hash = ?1 AND g.client_id = ?2
        """
    static let useRefresh = """
        UPDATE oidc_tokens SET used_at = ?2 WHERE token_hash = ?1 AND kind = 'refresh' AND used_at IS NULL
        RETURNING grant_id, expires_at
        """
    static let usedRefresh = """
        SELECT t.grant_id FROM oidc_tokens t JOIN oidc_grants g ON g.id = t.grant_id
        WHERE t.token_hash = ?1 AND t.kind = 'refresh' AND g.client_id = ?2
        """
    static let revokeGrant = "UPDATE oidc_grants SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL"
    static let insertToken = """
        INSERT INTO oidc_tokens (token_hash, grant_id, kind, expires_at, created_at) VALUES (?1, ?2, ?3, ?4, ?5)
        """
    static let liveToken = """
        SELECT grant_id, kind, expires_at, created_at FROM oidc_tokens
        WHERE token_hash = ?1 AND expires_at > ?2 AND used_at IS NULL
        """

    static func client(_ c: DirectSQLite, id: String) throws -> OIDCClient? {
        let s = try c.statement(clientByID)
        s.bind(1, id)
        var found: OIDCClient?
        try s.forEach { r in
            found = OIDCClient(
                id: r.string(0),
                name: r.string(1),
                secretHash: r.isNull(2) ? nil : r.string(2),
                redirectURIs: OIDCClientLists.values(r.string(3)),
                postLogoutRedirectURIs: OIDCClientLists.values(r.string(4)),
                backchannelLogoutURI: r.isNull(5) ? nil : r.string(5),
                firstParty: r.int64(6) != 0,
                policy: OIDCClient.Policy(rawValue: r.string(7)) ?? .mfa,
                allowedUsers: OIDCClientLists.values(r.string(8)),
                offlineAccess: r.int64(9) != 0,
                idTokenAlgorithm: OIDCClient.Algorithm(rawValue: r.string(10)) ?? .es256,
                pairwise: r.int64(11) != 0,
                pairing: r.int64(12) != 0,
                managed: r.int64(13) != 0,
                createdAt: Date(ms: r.int64(14))
            )
        }
        return found
    }

    static func grant(_ c: DirectSQLite, id: String) throws -> OIDCGrant? {
        let s = try c.statement(grantByID)
        s.bind(1, id)
        var found: OIDCGrant?
        try s.forEach { r in
            found = OIDCGrant(
                id: r.string(0),
                clientID: r.string(1),
                accountID: r.string(2),
                scope: OIDCScope.split(r.string(3)),
                sessionID: r.string(4),
                authTime: Date(ms: r.int64(5)),
                methods: SessionMethods.parse(r.isNull(6) ? nil : r.string(6)),
                nonce: r.isNull(7) ? nil : r.string(7),
                createdAt: Date(ms: r.int64(8)),
                revokedAt: r.isNull(9) ? nil : Date(ms: r.int64(9)),
                pairingPayload: r.isNull(10) ? nil : r.string(10),
                pairingKey: r.isNull(11) ? nil : r.string(11)
            )
        }
        return found
    }

    /// A grant's ID from a one-column statement, if a row came.
    static func firstString(_ s: DirectStatement) throws -> String? {
        var found: String?
        try s.forEach { found = $0.string(0) }
        return found
    }

    static func revoke(_ c: DirectSQLite, grantID: String, now: Date) throws -> OIDCRedemption {
        let s = try c.statement(revokeGrant)
        s.bind(1, grantID)
        s.bind(2, now.ms)
        try s.run()
        return .reused(try grant(c, id: grantID))
    }

    /// `SQLStores.redeemOIDCCode`, in the caller's write transaction.
    static func redeem(_ c: DirectSQLite, hash: String, clientID: String, now: Date) throws -> OIDCRedemption {
        let s = try c.statement(redeemCode)
        s.bind(1, hash)
        s.bind(2, now.ms)
        var code: OIDCCodeRecord?
        try s.forEach { r in
            code = OIDCCodeRecord(
                codeHash: hash,
                grantID: r.string(0),
                redirectURI: r.string(1),
                codeChallenge: r.isNull(2) ? nil : r.string(2),
                expiresAt: Date(ms: r.int64(3))
            )
        }
        guard let code else {
            // Spent before: the grant and everything it issued end (RFC 6749 §4.1.2, OIDF oidcc-codereuse).
            let spent = try c.statement(spentCode)
            spent.bind(1, hash)
            spent.bind(2, clientID)
            guard let id = try firstString(spent) else { return .unknown }
            return try revoke(c, grantID: id, now: now)
        }
        guard let grant = try grant(c, id: code.grantID), grant.clientID == clientID, grant.revokedAt == nil,
            code.expiresAt > now
        else { return .unknown }
        return .redeemed(grant, code: code)
    }

    /// `SQLStores.rotateOIDCRefreshToken`, in the caller's write transaction.
    static func rotate(
        _ c: DirectSQLite,
        hash: String,
        clientID: String,
        now: Date,
        successors: (OIDCGrant) -> [OIDCTokenRecord]?
    ) throws -> OIDCRedemption {
        let s = try c.statement(useRefresh)
        s.bind(1, hash)
        s.bind(2, now.ms)
        var used: (grantID: String, expiresAt: Int64)?
        try s.forEach { used = ($0.string(0), $0.int64(1)) }
        guard let used else {
            // A refresh token used twice: one of the two holders stole it; the whole family ends.
            let again = try c.statement(usedRefresh)
            again.bind(1, hash)
            again.bind(2, clientID)
            guard let id = try firstString(again) else { return .unknown }
            return try revoke(c, grantID: id, now: now)
        }
        guard let grant = try grant(c, id: used.grantID), grant.clientID == clientID, grant.revokedAt == nil,
            Date(ms: used.expiresAt) > now
        else { return .unknown }
        guard let next = successors(grant) else { return .unknown }
        try insert(c, next)
        return .redeemed(grant, code: nil)
    }

    static func insert(_ c: DirectSQLite, _ tokens: [OIDCTokenRecord]) throws {
        for t in tokens {
            let s = try c.statement(insertToken)
            s.bind(1, t.tokenHash)
            s.bind(2, t.grantID)
            s.bind(3, t.kind.rawValue)
            s.bind(4, t.expiresAt.ms)
            s.bind(5, t.createdAt.ms)
            try s.run()
        }
    }

    static func token(_ c: DirectSQLite, hash: String, now: Date) throws -> (OIDCTokenRecord, OIDCGrant)? {
        let s = try c.statement(liveToken)
        s.bind(1, hash)
        s.bind(2, now.ms)
        var found: OIDCTokenRecord?
        try s.forEach { r in
            found = OIDCTokenRecord(
                tokenHash: hash,
                grantID: r.string(0),
                kind: OIDCTokenRecord.Kind(rawValue: r.string(1)) ?? .access,
                expiresAt: Date(ms: r.int64(2)),
                createdAt: Date(ms: r.int64(3))
            )
        }
        guard let found, let grant = try grant(c, id: found.grantID), grant.revokedAt == nil else { return nil }
        return (found, grant)
    }
}
