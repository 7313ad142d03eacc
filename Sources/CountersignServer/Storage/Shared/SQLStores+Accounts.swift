import CountersignAPI
import FluentKit
import Foundation
import SQLKit

/// The account, session and audit statements both backends run. The sign-in path (the account and
/// lockout reads, the lockout transactions, the session start, password changes and the ends of sessions
/// that race them, the audit row) is each backend's own: `SQLiteStorage+Accounts.swift` on the direct
/// connections, `PostgresStorage+Accounts.swift` on the pool.
extension SQLStores {

    // MARK: Accounts

    package func createAccount(_ a: AccountRecord) async throws {
        try await writeTransaction { sql in
            let inserted = try await sql.raw(
                """
                INSERT INTO accounts (id, username, name, lastname, password_hash, reauth_minutes, created_at)
                VALUES (\(bind: a.id), \(bind: a.username), \(bind: a.name), \(bind: a.lastname), \(bind: a.passwordHash),
                        \(bind: Int64(a.reauthMinutes)), \(bind: a.createdAt.ms))
                ON CONFLICT (username) DO NOTHING RETURNING id
                """
            ).all()
            guard !inserted.isEmpty else { throw AccountError.usernameTaken }
            // Failures recorded against the name before it existed are not this account's.
            try await sql.raw("DELETE FROM login_guards WHERE username = \(bind: a.username)").run()
        }
    }

    package func usernames(limit: Int) async throws -> [String] {
        try await sql.raw("SELECT username FROM accounts ORDER BY username LIMIT \(bind: Int64(limit))").all().map {
            try $0.decode(column: "username", as: String.self)
        }
    }

    package func accounts(usernames: [String]) async throws -> [AccountRecord] {
        guard !usernames.isEmpty else { return [] }
        let reader = self.reader as! any SQLDatabase
        return try await reader.raw("SELECT * FROM accounts WHERE username IN (\(binds: usernames))").all().map(
            Self.account
        )
    }

    static func account(_ row: any SQLRow) throws -> AccountRecord {
        AccountRecord(
            id: try row.decode(column: "id", as: String.self),
            username: try row.decode(column: "username", as: String.self),
            name: try row.decode(column: "name", as: String.self),
            lastname: try row.decode(column: "lastname", as: String.self),
            passwordHash: try row.decode(column: "password_hash", as: String.self),
            reauthMinutes: Int(try row.decode(column: "reauth_minutes", as: Int64.self)),
            createdAt: Date(ms: try row.decode(column: "created_at", as: Int64.self))
        )
    }

    package func setReauthMinutes(_ minutes: Int, accountID: String) async throws {
        try await sql.raw("UPDATE accounts SET reauth_minutes = \(bind: Int64(minutes)) WHERE id = \(bind: accountID)")
            .run()
    }

    // MARK: Lockout

    package func unlock(username: String) async throws -> Bool {
        !(try await sql.raw("DELETE FROM login_guards WHERE username = \(bind: username) RETURNING username").all()
            .isEmpty)
    }

    /// FOR SHARE on PostgreSQL: a lock in flight is waited for, not read around.
    package func isLocked(username: String) async throws -> Bool {
        try await sql.raw(
            "SELECT locked FROM login_guards WHERE username = \(bind: username)\(dialect.forShare())"
        ).first()?
        .decode(column: "locked", as: Int64.self) ?? 0 != 0
    }

    // MARK: Sessions

    package func createSession(_ s: SessionRecord) async throws {
        try await Self.insertSession(sql, s)
    }

    static func insertSession(_ sql: any SQLDatabase, _ s: SessionRecord) async throws {
        try await sql.raw(
            """
            INSERT INTO sessions (token_hash, account_id, created_at, last_used_at, authenticated_at, expires_at, address, user_agent, passkey_id, binding_id, amr)
            VALUES (\(bind: s.tokenHash), \(bind: s.accountID), \(bind: s.createdAt.ms), \(bind: s.lastUsedAt.ms),
                    \(bind: s.authenticatedAt.ms), \(bind: s.expiresAt.ms), \(bind: s.address), \(bind: s.userAgent),
                    \(bind: s.passkeyID), \(bind: s.bindingID), \(bind: SessionMethods.text(s.methods)))
            """
        ).run()
    }

    package func session(tokenHash: String) async throws -> SessionRecord? {
        try await sql.raw("SELECT * FROM sessions WHERE token_hash = \(bind: tokenHash)").first().map { row in
            SessionRecord(
                tokenHash: try row.decode(column: "token_hash", as: String.self),
                accountID: try row.decode(column: "account_id", as: String.self),
                createdAt: Date(ms: try row.decode(column: "created_at", as: Int64.self)),
                lastUsedAt: Date(ms: try row.decode(column: "last_used_at", as: Int64.self)),
                authenticatedAt: Date(ms: try row.decode(column: "authenticated_at", as: Int64.self)),
                expiresAt: Date(ms: try row.decode(column: "expires_at", as: Int64.self)),
                address: try row.decode(column: "address", as: String.self),
                userAgent: try row.decode(column: "user_agent", as: String.self),
                passkeyID: try row.decode(column: "passkey_id", as: String?.self),
                bindingID: try row.decode(column: "binding_id", as: String?.self),
                methods: SessionMethods.parse(try row.decode(column: "amr", as: String?.self))
            )
        }
    }

    /// The session's binding (if any) is touched with it: a browser in use stays signed in.
    package func touchSession(tokenHash: String, at: Date) async throws {
        try await sql.raw("UPDATE sessions SET last_used_at = \(bind: at.ms) WHERE token_hash = \(bind: tokenHash)")
            .run()
        try await sql.raw(
            """
            UPDATE session_bindings SET last_used_at = \(bind: at.ms)
            WHERE id = (SELECT binding_id FROM sessions WHERE token_hash = \(bind: tokenHash))
            """
        ).run()
    }

    /// The binding remembers it too, for the sessions resumed from it later.
    package func markReauthenticated(tokenHash: String, at: Date, methods: [String]) async throws {
        let amr = SessionMethods.text(methods)
        try await sql.raw(
            """
            UPDATE sessions SET authenticated_at = \(bind: at.ms), last_used_at = \(bind: at.ms), amr = \(bind: amr)
            WHERE token_hash = \(bind: tokenHash)
            """
        ).run()
        try await sql.raw(
            """
            UPDATE session_bindings SET authenticated_at = \(bind: at.ms), last_used_at = \(bind: at.ms), amr = \(bind: amr)
            WHERE id = (SELECT binding_id FROM sessions WHERE token_hash = \(bind: tokenHash))
            """
        ).run()
    }

    package func purgeExpired(now: Date, idle: TimeInterval) async throws {
        try await sql.raw(
            """
            DELETE FROM sessions WHERE expires_at <= \(bind: now.ms) OR last_used_at <= \(bind: now.addingTimeInterval(-idle).ms)
            """
        ).run()
        try await sql.raw("DELETE FROM captcha_spent WHERE expires_at <= \(bind: now.ms)").run()
        try await sql.raw(
            """
            DELETE FROM audit_events WHERE account_id = \(bind: AuditEvent.unknownAccountID) AND at <= \(bind: now.addingTimeInterval(-86_400).ms)
            """
        ).run()
    }

    // MARK: Audit

    static func insertAudit(_ sql: any SQLDatabase, _ e: AuditEntry) async throws {
        try await sql.raw(
            """
            INSERT INTO audit_events (account_id, at, kind, outcome, address, user_agent)
            VALUES (\(bind: e.accountID), \(bind: e.at.ms), \(bind: e.kind), \(bind: e.outcome), \(bind: e.address), \(bind: e.userAgent))
            """
        ).run()
    }

    package func auditEvents(accountID: String, before: Int64?, limit: Int) async throws -> [AuditEvent] {
        try await sql.raw(
            """
            SELECT * FROM audit_events WHERE account_id = \(bind: accountID) AND id < \(bind: before ?? Int64.max)
            ORDER BY id DESC LIMIT \(bind: Int64(limit))
            """
        ).all().map { row in
            AuditEvent(
                id: try row.decode(column: "id", as: Int64.self),
                at: Date(ms: try row.decode(column: "at", as: Int64.self)),
                kind: try row.decode(column: "kind", as: String.self),
                outcome: try row.decode(column: "outcome", as: String.self),
                address: try row.decode(column: "address", as: String.self),
                userAgent: try row.decode(column: "user_agent", as: String.self)
            )
        }
    }

    // MARK: Captcha and secrets

    package func spendCaptcha(challenge: String, expiresAt: Date) async throws -> Bool {
        !(try await sql.raw(
            """
            INSERT INTO captcha_spent (challenge, expires_at) VALUES (\(bind: challenge), \(bind: expiresAt.ms))
            ON CONFLICT (challenge) DO NOTHING RETURNING challenge
            """
        ).all().isEmpty)
    }

    package func serverSecret(name: String, create: @Sendable () -> [UInt8]) async throws -> [UInt8] {
        try await sql.serverSecret(name: name, create: create)
    }
}

extension Date {
    var ms: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }
    init(ms: Int64) { self.init(timeIntervalSince1970: TimeInterval(ms) / 1000) }
}
