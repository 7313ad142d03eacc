import Foundation
import SQLKit

/// The OpenID Connect provider's storage (`OIDCStore`), the same SQL on both backends. A code or a refresh
/// token is spent by one UPDATE … RETURNING, so two redemptions racing (nodes, or the same second) see one
/// success; the loser finds it spent and revokes the grant.
extension SQLStores {
    // MARK: Clients

    package func oidcClients() async throws -> [OIDCClient] {
        try await sql.raw("SELECT * FROM oidc_clients ORDER BY id").all().map(Self.client)
    }

    package func oidcClient(id: String) async throws -> OIDCClient? {
        try await sql.raw("SELECT * FROM oidc_clients WHERE id = \(bind: id)").first().map(Self.client)
    }

    package func addOIDCClient(_ c: OIDCClient) async throws -> Bool {
        try await sql.raw(
            """
            INSERT INTO oidc_clients (id, name, secret_hash, redirect_uris, post_logout_redirect_uris,
                backchannel_logout_uri, first_party, policy, allowed_users, offline_access, id_token_alg, pairwise,
                pairing, managed, created_at)
            VALUES (\(bind: c.id), \(bind: c.name), \(bind: c.secretHash), \(bind: Self.lines(c.redirectURIs)),
                \(bind: Self.lines(c.postLogoutRedirectURIs)), \(bind: c.backchannelLogoutURI),
                \(bind: c.firstParty ? 1 : 0), \(bind: c.policy.rawValue), \(bind: Self.lines(c.allowedUsers)),
                \(bind: c.offlineAccess ? 1 : 0), \(bind: c.idTokenAlgorithm.rawValue), \(bind: c.pairwise ? 1 : 0),
                \(bind: c.pairing ? 1 : 0), \(bind: c.managed ? 1 : 0), \(bind: c.createdAt.ms))
            ON CONFLICT (id) DO NOTHING RETURNING id
            """
        ).first() != nil
    }

    package func updateOIDCClient(_ c: OIDCClient) async throws -> Bool {
        try await sql.raw(
            """
            UPDATE oidc_clients SET name = \(bind: c.name), secret_hash = \(bind: c.secretHash),
                redirect_uris = \(bind: Self.lines(c.redirectURIs)),
                post_logout_redirect_uris = \(bind: Self.lines(c.postLogoutRedirectURIs)),
                backchannel_logout_uri = \(bind: c.backchannelLogoutURI), first_party = \(bind: c.firstParty ? 1 : 0),
                policy = \(bind: c.policy.rawValue), allowed_users = \(bind: Self.lines(c.allowedUsers)),
                offline_access = \(bind: c.offlineAccess ? 1 : 0), id_token_alg = \(bind: c.idTokenAlgorithm.rawValue),
                pairwise = \(bind: c.pairwise ? 1 : 0), pairing = \(bind: c.pairing ? 1 : 0),
                managed = \(bind: c.managed ? 1 : 0)
            WHERE id = \(bind: c.id) RETURNING id
            """
        ).first() != nil
    }

    package func removeOIDCClient(id: String, now: Date) async throws -> Bool {
        try await writeTransaction { sql in
            try await sql.raw(
                "UPDATE oidc_grants SET revoked_at = \(bind: now.ms) WHERE client_id = \(bind: id) AND revoked_at IS NULL"
            ).run()
            try await sql.raw("DELETE FROM oidc_consents WHERE client_id = \(bind: id)").run()
            return try await sql.raw("DELETE FROM oidc_clients WHERE id = \(bind: id) RETURNING id").first() != nil
        }
    }

    static func client(_ row: any SQLRow) throws -> OIDCClient {
        OIDCClient(
            id: try row.decode(column: "id", as: String.self),
            name: try row.decode(column: "name", as: String.self),
            secretHash: try row.decode(column: "secret_hash", as: String?.self),
            redirectURIs: split(try row.decode(column: "redirect_uris", as: String.self)),
            postLogoutRedirectURIs: split(try row.decode(column: "post_logout_redirect_uris", as: String.self)),
            backchannelLogoutURI: try row.decode(column: "backchannel_logout_uri", as: String?.self),
            firstParty: try row.decode(column: "first_party", as: Int64.self) != 0,
            policy: OIDCClient.Policy(rawValue: try row.decode(column: "policy", as: String.self)) ?? .mfa,
            allowedUsers: split(try row.decode(column: "allowed_users", as: String.self)),
            offlineAccess: try row.decode(column: "offline_access", as: Int64.self) != 0,
            idTokenAlgorithm: OIDCClient.Algorithm(rawValue: try row.decode(column: "id_token_alg", as: String.self))
                ?? .es256,
            pairwise: try row.decode(column: "pairwise", as: Int64.self) != 0,
            pairing: try row.decode(column: "pairing", as: Int64.self) != 0,
            managed: try row.decode(column: "managed", as: Int64.self) != 0,
            createdAt: Date(ms: try row.decode(column: "created_at", as: Int64.self))
        )
    }

    static func lines(_ values: [String]) -> String { OIDCClientLists.text(values) }
    static func split(_ text: String) -> [String] { OIDCClientLists.values(text) }

    // MARK: Signing keys

    package func oidcSigningKeys() async throws -> [OIDCSigningKeyRecord] {
        try await sql.raw("SELECT * FROM oidc_signing_keys ORDER BY created_at").all().map { row in
            OIDCSigningKeyRecord(
                kid: try row.decode(column: "kid", as: String.self),
                algorithm: OIDCClient.Algorithm(rawValue: try row.decode(column: "alg", as: String.self)) ?? .es256,
                sealedPrivateKey: Array(try row.decode(column: "private_key", as: Data.self)),
                createdAt: Date(ms: try row.decode(column: "created_at", as: Int64.self)),
                retiredAt: try row.decode(column: "retired_at", as: Int64?.self).map(Date.init(ms:)),
                publishedUntil: try row.decode(column: "published_until", as: Int64?.self).map(Date.init(ms:))
            )
        }
    }

    package func rotateOIDCSigningKey(_ key: OIDCSigningKeyRecord, retiredPublishedUntil until: Date) async throws {
        try await writeTransaction { sql in
            try await sql.raw(
                """
                UPDATE oidc_signing_keys SET retired_at = \(bind: key.createdAt.ms), published_until = \(bind: until.ms)
                WHERE alg = \(bind: key.algorithm.rawValue) AND retired_at IS NULL
                """
            ).run()
            try await sql.raw(
                """
                INSERT INTO oidc_signing_keys (kid, alg, private_key, created_at)
                VALUES (\(bind: key.kid), \(bind: key.algorithm.rawValue), \(bind: Data(key.sealedPrivateKey)),
                    \(bind: key.createdAt.ms))
                """
            ).run()
        }
    }

    package func purgeOIDCSigningKeys(now: Date) async throws {
        try await sql.raw("DELETE FROM oidc_signing_keys WHERE published_until <= \(bind: now.ms)").run()
    }

    // MARK: Consents

    package func oidcConsent(accountID: String, clientID: String) async throws -> [String]? {
        try await sql.raw(
            "SELECT scope FROM oidc_consents WHERE account_id = \(bind: accountID) AND client_id = \(bind: clientID)"
        ).first().map { OIDCScope.split(try $0.decode(column: "scope", as: String.self)) }
    }

    package func setOIDCConsent(accountID: String, clientID: String, scope: [String], at: Date) async throws {
        try await sql.raw(
            """
            INSERT INTO oidc_consents (account_id, client_id, scope, granted_at)
            VALUES (\(bind: accountID), \(bind: clientID), \(bind: OIDCScope.text(scope)), \(bind: at.ms))
            ON CONFLICT (account_id, client_id) DO UPDATE SET scope = excluded.scope, granted_at = excluded.granted_at
            """
        ).run()
    }

    package func oidcConsents(accountID: String) async throws -> [(clientID: String, scope: [String], at: Date)] {
        try await sql.raw(
            "SELECT client_id, scope, granted_at FROM oidc_consents WHERE account_id = \(bind: accountID) ORDER BY client_id"
        ).all().map { row in
            (
                try row.decode(column: "client_id", as: String.self),
                OIDCScope.split(try row.decode(column: "scope", as: String.self)),
                Date(ms: try row.decode(column: "granted_at", as: Int64.self))
            )
        }
    }

    package func removeOIDCConsent(accountID: String, clientID: String, now: Date) async throws -> [OIDCGrant]? {
        try await writeTransaction { sql in
            // Only a consent that was there ends anything (a first-party client's grants are not touched).
            guard
                try await sql.raw(
                    """
                    DELETE FROM oidc_consents WHERE account_id = \(bind: accountID) AND client_id = \(bind: clientID)
                    RETURNING client_id
                    """
                ).first() != nil
            else { return nil }
            return try await sql.raw(
                """
                UPDATE oidc_grants SET revoked_at = \(bind: now.ms)
                WHERE account_id = \(bind: accountID) AND client_id = \(bind: clientID) AND revoked_at IS NULL
                RETURNING *
                """
            ).all().map(Self.grant)
        }
    }

    package func oidcGrant(id: String) async throws -> OIDCGrant? {
        try await Self.grant(sql, id: id)
    }

    package func revokeOIDCGrant(id: String, now: Date) async throws {
        try await Self.revokeGrant(sql, id, now: now)
    }

    // MARK: Grants, codes and tokens

    package func createOIDCGrant(_ g: OIDCGrant, code: OIDCCodeRecord) async throws {
        try await writeTransaction { sql in
            try await sql.raw(
                """
                INSERT INTO oidc_grants (id, client_id, account_id, scope, session_id, auth_time, amr, nonce, created_at,
                    pairing_payload, pairing_key)
                VALUES (\(bind: g.id), \(bind: g.clientID), \(bind: g.accountID), \(bind: OIDCScope.text(g.scope)),
                    \(bind: g.sessionID), \(bind: g.authTime.ms), \(bind: SessionMethods.text(g.methods)),
                    \(bind: g.nonce), \(bind: g.createdAt.ms), \(bind: g.pairingPayload), \(bind: g.pairingKey))
                """
            ).run()
            try await sql.raw(
                """
                INSERT INTO oidc_codes (code_hash, grant_id, redirect_uri, code_challenge, expires_at)
                VALUES (\(bind: code.codeHash), \(bind: g.id), \(bind: code.redirectURI), \(bind: code.codeChallenge),
                    \(bind: code.expiresAt.ms))
                """
            ).run()
        }
    }

    package func redeemOIDCCode(hash: String, clientID: String, now: Date) async throws -> OIDCRedemption {
        try await writeTransaction { sql in
            guard
                let row = try await sql.raw(
                    """
                    UPDATE oidc_codes SET redeemed_at = \(bind: now.ms)
                    WHERE code_hash = \(bind: hash) AND redeemed_at IS NULL
                    RETURNING grant_id, redirect_uri, code_challenge, expires_at
                    """
                ).first()
            else {
                // Spent before: the grant and everything it issued end (RFC 6749 §4.1.2, OIDF oidcc-codereuse).
                guard
                    let spent = try await sql.raw(
                        """
                        SELECT c.grant_id FROM oidc_codes c JOIN oidc_grants g ON g.id = c.grant_id
                        WHERE c.code_hash = \(bind: hash) AND g.client_id = \(bind: clientID)
                        """
                    ).first()
                else { return .unknown }
                let id = try spent.decode(column: "grant_id", as: String.self)
                try await Self.revokeGrant(sql, id, now: now)
                return .reused(try await Self.grant(sql, id: id))
            }
            let code = OIDCCodeRecord(
                codeHash: hash,
                grantID: try row.decode(column: "grant_id", as: String.self),
                redirectURI: try row.decode(column: "redirect_uri", as: String.self),
                codeChallenge: try row.decode(column: "code_challenge", as: String?.self),
                expiresAt: Date(ms: try row.decode(column: "expires_at", as: Int64.self))
            )
            guard let grant = try await Self.grant(sql, id: code.grantID), grant.clientID == clientID,
                grant.revokedAt == nil, code.expiresAt > now
            else { return .unknown }
            return .redeemed(grant, code: code)
        }
    }

    package func storeOIDCTokens(_ tokens: [OIDCTokenRecord]) async throws {
        try await writeTransaction { sql in try await Self.insert(sql, tokens) }
    }

    package func rotateOIDCRefreshToken(
        hash: String,
        clientID: String,
        now: Date,
        successors: @escaping @Sendable (OIDCGrant) -> [OIDCTokenRecord]?
    ) async throws -> OIDCRedemption {
        try await writeTransaction { sql in
            guard
                let row = try await sql.raw(
                    """
                    UPDATE oidc_tokens SET used_at = \(bind: now.ms)
                    WHERE token_hash = \(bind: hash) AND kind = 'refresh' AND used_at IS NULL
                    RETURNING grant_id, expires_at
                    """
                ).first()
            else {
                guard
                    let used = try await sql.raw(
                        """
                        SELECT t.grant_id FROM oidc_tokens t JOIN oidc_grants g ON g.id = t.grant_id
                        WHERE t.token_hash = \(bind: hash) AND t.kind = 'refresh' AND g.client_id = \(bind: clientID)
                        """
                    ).first()
                else { return .unknown }
                // A refresh token used twice: one of the two holders stole it; the whole family ends.
                let id = try used.decode(column: "grant_id", as: String.self)
                try await Self.revokeGrant(sql, id, now: now)
                return .reused(try await Self.grant(sql, id: id))
            }
            let grantID = try row.decode(column: "grant_id", as: String.self)
            guard let grant = try await Self.grant(sql, id: grantID), grant.clientID == clientID,
                grant.revokedAt == nil, Date(ms: try row.decode(column: "expires_at", as: Int64.self)) > now
            else { return .unknown }
            guard let next = successors(grant) else { return .unknown }
            try await Self.insert(sql, next)
            return .redeemed(grant, code: nil)
        }
    }

    package func oidcToken(hash: String, now: Date) async throws -> (OIDCTokenRecord, OIDCGrant)? {
        guard
            let row = try await sql.raw(
                """
                SELECT * FROM oidc_tokens WHERE token_hash = \(bind: hash) AND expires_at > \(bind: now.ms)
                    AND used_at IS NULL
                """
            ).first()
        else { return nil }
        let token = OIDCTokenRecord(
            tokenHash: hash,
            grantID: try row.decode(column: "grant_id", as: String.self),
            kind: OIDCTokenRecord.Kind(rawValue: try row.decode(column: "kind", as: String.self)) ?? .access,
            expiresAt: Date(ms: try row.decode(column: "expires_at", as: Int64.self)),
            createdAt: Date(ms: try row.decode(column: "created_at", as: Int64.self))
        )
        guard let grant = try await Self.grant(sql, id: token.grantID), grant.revokedAt == nil else { return nil }
        return (token, grant)
    }

    package func revokeOIDCToken(hash: String, clientID: String, now: Date) async throws -> Bool {
        try await writeTransaction { sql in
            guard
                let row = try await sql.raw(
                    """
                    SELECT t.grant_id FROM oidc_tokens t JOIN oidc_grants g ON g.id = t.grant_id
                    WHERE t.token_hash = \(bind: hash) AND g.client_id = \(bind: clientID)
                    """
                ).first()
            else { return false }
            try await Self.revokeGrant(sql, try row.decode(column: "grant_id", as: String.self), now: now)
            return true
        }
    }

    package func revokeOIDCGrants(accountID: String, now: Date) async throws -> [OIDCGrant] {
        try await writeTransaction { sql in
            let rows = try await sql.raw(
                """
                UPDATE oidc_grants SET revoked_at = \(bind: now.ms)
                WHERE account_id = \(bind: accountID) AND revoked_at IS NULL RETURNING *
                """
            ).all()
            return try rows.map(Self.grant)
        }
    }

    package func revokeOIDCGrants(
        accountID: String,
        sessionID: String,
        bindingID: String?,
        now: Date
    ) async throws
        -> [OIDCGrant]
    {
        try await writeTransaction { sql in
            try await sql.raw(
                """
                UPDATE oidc_grants SET revoked_at = \(bind: now.ms)
                WHERE account_id = \(bind: accountID) AND revoked_at IS NULL
                  AND (session_id = \(bind: sessionID) OR session_id = \(bind: bindingID ?? sessionID)
                       OR session_id IN (SELECT 's_' || substr(token_hash, 1, 24) FROM sessions
                                         WHERE binding_id = \(bind: bindingID ?? "") AND account_id = \(bind: accountID)))
                RETURNING *
                """
            ).all().map(Self.grant)
        }
    }

    package func revokeOIDCGrants(clientID: String, now: Date) async throws {
        try await sql.raw(
            """
            UPDATE oidc_grants SET revoked_at = \(bind: now.ms) WHERE client_id = \(bind: clientID) AND revoked_at IS NULL
            """
        ).run()
    }

    package func purgeOIDC(now: Date) async throws {
        try await writeTransaction { sql in
            try await sql.raw("DELETE FROM oidc_codes WHERE expires_at <= \(bind: now.ms)").run()
            try await sql.raw("DELETE FROM oidc_tokens WHERE expires_at <= \(bind: now.ms)").run()
            // A grant is kept while it is live, even with no token left: its client is still signed in with that
            // browser session and is told when it ends (back-channel logout). Revoked ones go after an hour, the
            // rest at the end of their lifetime.
            try await sql.raw(
                """
                DELETE FROM oidc_grants WHERE revoked_at <= \(bind: now.addingTimeInterval(-3600).ms)
                    OR created_at <= \(bind: now.addingTimeInterval(-OIDCService.grantLifetime).ms)
                """
            ).run()
        }
    }

    static func revokeGrant(_ sql: any SQLDatabase, _ id: String, now: Date) async throws {
        try await sql.raw(
            "UPDATE oidc_grants SET revoked_at = \(bind: now.ms) WHERE id = \(bind: id) AND revoked_at IS NULL"
        ).run()
    }

    static func grant(_ sql: any SQLDatabase, id: String) async throws -> OIDCGrant? {
        try await sql.raw("SELECT * FROM oidc_grants WHERE id = \(bind: id)").first().map(grant)
    }

    static func grant(_ row: any SQLRow) throws -> OIDCGrant {
        OIDCGrant(
            id: try row.decode(column: "id", as: String.self),
            clientID: try row.decode(column: "client_id", as: String.self),
            accountID: try row.decode(column: "account_id", as: String.self),
            scope: OIDCScope.split(try row.decode(column: "scope", as: String.self)),
            sessionID: try row.decode(column: "session_id", as: String.self),
            authTime: Date(ms: try row.decode(column: "auth_time", as: Int64.self)),
            methods: SessionMethods.parse(try row.decode(column: "amr", as: String?.self)),
            nonce: try row.decode(column: "nonce", as: String?.self),
            createdAt: Date(ms: try row.decode(column: "created_at", as: Int64.self)),
            revokedAt: try row.decode(column: "revoked_at", as: Int64?.self).map(Date.init(ms:)),
            pairingPayload: try row.decode(column: "pairing_payload", as: String?.self),
            pairingKey: try row.decode(column: "pairing_key", as: String?.self)
        )
    }

    static func insert(_ sql: any SQLDatabase, _ tokens: [OIDCTokenRecord]) async throws {
        for t in tokens {
            try await sql.raw(
                """
                INSERT INTO oidc_tokens (token_hash, grant_id, kind, expires_at, created_at)
                VALUES (\(bind: t.tokenHash), \(bind: t.grantID), \(bind: t.kind.rawValue), \(bind: t.expiresAt.ms),
                    \(bind: t.createdAt.ms))
                """
            ).run()
        }
    }
}

/// How a client's lists (redirect URIs, allowed users) are stored, one per line, on every backend and connection.
enum OIDCClientLists {
    static func text(_ values: [String]) -> String { values.joined(separator: "\n") }
    static func values(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }
}
