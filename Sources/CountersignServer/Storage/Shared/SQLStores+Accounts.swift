import CountersignAPI
import FluentKit
import Foundation
import SQLKit

/// `AccountStore` over SQLKit, for SQLite and PostgreSQL alike (SQLite runs the sign-in path on its
/// direct connections instead: `SQLiteStorage+Accounts.swift`). Lockout updates are read-modify-write
/// inside a write transaction: PostgreSQL locks the row (`FOR UPDATE`); on SQLite the transaction holds
/// the file's one write lock from its start (BEGIN IMMEDIATE), whichever connection runs it.
extension SQLStores {

    // MARK: Accounts

    package func createAccount(_ a: AccountRecord) async throws {
        try await database.writeTransaction { sql in
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

    package func account(username: String) async throws -> AccountRecord? {
        try await sql.raw("SELECT * FROM accounts WHERE username = \(bind: username)").first().map(Self.account)
    }

    package func usernames(limit: Int) async throws -> [String] {
        try await sql.raw("SELECT username FROM accounts ORDER BY username LIMIT \(bind: Int64(limit))").all().map {
            try $0.decode(column: "username", as: String.self)
        }
    }

    package func account(id: String) async throws -> AccountRecord? {
        try await sql.raw("SELECT * FROM accounts WHERE id = \(bind: id)").first().map(Self.account)
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

    package func setPasswordHash(_ hash: String, accountID: String) async throws {
        try await sql.raw("UPDATE accounts SET password_hash = \(bind: hash) WHERE id = \(bind: accountID)").run()
    }

    package func changePassword(_ hash: String, accountID: String, keepingSession: String) async throws {
        try await database.writeTransaction { sql in
            try await sql.raw("UPDATE accounts SET password_hash = \(bind: hash) WHERE id = \(bind: accountID)").run()
            try await Self.endSessions(sql, accountID: accountID, keeping: keepingSession)
        }
    }

    package func replacePasswordHash(_ old: String, with new: String, accountID: String) async throws -> Bool {
        !(try await sql.raw(
            """
            UPDATE accounts SET password_hash = \(bind: new) WHERE id = \(bind: accountID) AND password_hash = \(bind: old) RETURNING id
            """
        ).all().isEmpty)
    }

    package func setReauthMinutes(_ minutes: Int, accountID: String) async throws {
        try await sql.raw("UPDATE accounts SET reauth_minutes = \(bind: Int64(minutes)) WHERE id = \(bind: accountID)")
            .run()
    }

    // MARK: Lockout

    /// Runs `change` on the username's guard inside one transaction, creating the row when absent.
    private func withGuard<T: Sendable>(
        _ username: String,
        _ change: @escaping @Sendable (inout LoginGuard) -> T
    ) async throws -> T {
        let postgres = isPostgres
        return try await database.writeTransaction { sql in
            try await Self.changeGuard(sql, username, postgres: postgres, change)
        }
    }

    /// `withGuard`'s body, inside the caller's transaction. A change that locks the username ends its
    /// account's sessions in the same transaction (`LoginGuard.locks`).
    private static func changeGuard<T: Sendable>(
        _ sql: any SQLDatabase,
        _ username: String,
        postgres: Bool,
        _ change: (inout LoginGuard) -> T
    ) async throws -> T {
        try await sql.raw(
            """
            INSERT INTO login_guards (username, failures, pending, locked) VALUES (\(bind: username), 0, 0, 0)
            ON CONFLICT (username) DO NOTHING
            """
        ).run()
        let lock: SQLQueryString = postgres ? " FOR UPDATE" : ""
        guard
            let row = try await sql.raw("SELECT * FROM login_guards WHERE username = \(bind: username)\(lock)")
                .first()
        else {
            throw SignInRefusal.busy
        }
        var state = try Self.loginGuard(row)
        let before = state
        let result = change(&state)
        if state != before {
            try await sql.raw(
                """
                UPDATE login_guards SET failures = \(bind: Int64(state.failures)), pending = \(bind: Int64(state.pending)),
                    pending_expires_at = \(bind: state.pendingExpiresAt?.ms), delayed_until = \(bind: state.delayedUntil?.ms),
                    locked = \(bind: Int64(state.locked ? 1 : 0))
                WHERE username = \(bind: username)
                """
            ).run()
        }
        if LoginGuard.locks(from: before, to: state) {
            // Pairing keys first: on PostgreSQL this waits for a pairing that is spending one, so the
            // deletes below see the device session it stores.
            for table in ["pairing_keys", "sessions", "device_sessions"] {
                try await sql.raw(
                    """
                    DELETE FROM \(unsafeRaw: table) WHERE account_id IN (SELECT id FROM accounts WHERE username = \(bind: username))
                    """
                ).run()
            }
        }
        return result
    }

    static func loginGuard(_ row: any SQLRow) throws -> LoginGuard {
        LoginGuard(
            failures: Int(try row.decode(column: "failures", as: Int64.self)),
            pending: Int(try row.decode(column: "pending", as: Int64.self)),
            pendingExpiresAt: try row.decode(column: "pending_expires_at", as: Int64?.self).map(Date.init(ms:)),
            delayedUntil: try row.decode(column: "delayed_until", as: Int64?.self).map(Date.init(ms:)),
            locked: try row.decode(column: "locked", as: Int64.self) != 0
        )
    }

    package func reserveSignIn(username: String, policy: LockoutPolicy, now: Date) async throws -> LockoutPolicy.Gate {
        try await withGuard(username) { policy.reserve(&$0, now: now) }
    }

    package func finishSignIn(
        username: String,
        check: LockoutPolicy.Check,
        policy: LockoutPolicy,
        now: Date
    ) async throws -> SignInOutcome {
        try await withGuard(username) { policy.finish(&$0, check, now: now) }
    }

    package func countSignInFailure(
        username: String,
        policy: LockoutPolicy,
        now: Date
    ) async throws -> LockoutPolicy.Failure {
        try await withGuard(username) { policy.countFailure(&$0, now: now) }
    }

    package func completeSignIn(username: String, policy: LockoutPolicy, now: Date) async throws -> LockoutPolicy.Gate {
        try await withGuard(username) { policy.complete(&$0, now: now) }
    }

    package func startSession(
        _ session: SessionRecord,
        username: String,
        passwordHash: String,
        policy: LockoutPolicy,
        now: Date,
        audit: AuditEntry,
        resetsCount: Bool,
        claim: SessionClaim?
    ) async throws -> SessionStart {
        let postgres = isPostgres
        return try await database.writeTransaction { sql in
            // FOR SHARE on PostgreSQL: a password change's UPDATE waits for this transaction, so the
            // sessions it then ends include this one; an UPDATE in flight makes this read wait and see
            // its hash. (SQLite's write lock already orders them.) Checked before anything is written: a
            // check made with a changed password resets no count.
            let share: SQLQueryString = postgres ? " FOR SHARE" : ""
            let current = try await sql.raw(
                "SELECT password_hash FROM accounts WHERE id = \(bind: session.accountID)\(share)"
            ).first()?.decode(column: "password_hash", as: String.self)
            guard current == passwordHash else { return .superseded }
            // A passkey removed meanwhile ended the sessions it made; it makes none after (FOR SHARE: a
            // removal's DELETE waits, and its sweep then sees this session).
            if let passkeyID = session.passkeyID,
                try await sql.raw(
                    """
                    SELECT id FROM passkeys WHERE id = \(bind: passkeyID) AND account_id = \(bind: session.accountID)\(share)
                    """
                ).first() == nil
            {
                return .superseded
            }
            if let claim, try await !Self.spend(sql, claim) { return .claimLost }
            let gate = try await Self.changeGuard(sql, username, postgres: postgres) {
                resetsCount ? policy.complete(&$0, now: now) : policy.gate(&$0, now: now)
            }
            guard gate == .proceed else { return .refused(gate) }
            try await Self.insertSession(sql, session)
            try await Self.insertAudit(sql, audit)
            return .started
        }
    }

    /// Compare-and-set of the claim's record; false when it is no longer at the version read.
    private static func spend(_ sql: any SQLDatabase, _ claim: SessionClaim) async throws -> Bool {
        let query: SQLQueryString
        switch claim {
        case .mfaTransaction(let id, let state, let expected):
            query = """
                UPDATE mfa_transactions SET state = \(bind: String(decoding: state, as: UTF8.self)), version = version + 1
                WHERE id = \(bind: id) AND version = \(bind: expected) RETURNING version
                """
        case .authCode(let hash, let state, let expected):
            query = """
                UPDATE auth_codes SET state = \(bind: String(decoding: state, as: UTF8.self)), version = version + 1
                WHERE code_hash = \(bind: hash) AND version = \(bind: expected) RETURNING version
                """
        }
        return try await !sql.raw(query).all().isEmpty
    }

    package func releaseSignIn(username: String, policy: LockoutPolicy, now: Date) async throws -> Bool {
        try await withGuard(username) { policy.release(&$0, now: now) }
    }

    package func unlock(username: String) async throws -> Bool {
        !(try await sql.raw("DELETE FROM login_guards WHERE username = \(bind: username) RETURNING username").all()
            .isEmpty)
    }

    package func loginGuard(username: String) async throws -> LoginGuard? {
        try await sql.raw("SELECT * FROM login_guards WHERE username = \(bind: username)").first().map(Self.loginGuard)
    }

    package func isLocked(username: String) async throws -> Bool {
        let share: SQLQueryString = isPostgres ? " FOR SHARE" : ""
        return try await sql.raw("SELECT locked FROM login_guards WHERE username = \(bind: username)\(share)").first()?
            .decode(column: "locked", as: Int64.self) ?? 0 != 0
    }

    // MARK: Sessions

    package func createSession(_ s: SessionRecord) async throws {
        try await Self.insertSession(sql, s)
    }

    private static func insertSession(_ sql: any SQLDatabase, _ s: SessionRecord) async throws {
        try await sql.raw(
            """
            INSERT INTO sessions (token_hash, account_id, created_at, last_used_at, authenticated_at, expires_at, address, user_agent, passkey_id)
            VALUES (\(bind: s.tokenHash), \(bind: s.accountID), \(bind: s.createdAt.ms), \(bind: s.lastUsedAt.ms),
                    \(bind: s.authenticatedAt.ms), \(bind: s.expiresAt.ms), \(bind: s.address), \(bind: s.userAgent),
                    \(bind: s.passkeyID))
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
                passkeyID: try row.decode(column: "passkey_id", as: String?.self)
            )
        }
    }

    package func touchSession(tokenHash: String, at: Date) async throws {
        try await sql.raw("UPDATE sessions SET last_used_at = \(bind: at.ms) WHERE token_hash = \(bind: tokenHash)")
            .run()
    }

    package func markReauthenticated(tokenHash: String, at: Date) async throws {
        try await sql.raw(
            "UPDATE sessions SET authenticated_at = \(bind: at.ms), last_used_at = \(bind: at.ms) WHERE token_hash = \(bind: tokenHash)"
        ).run()
    }

    package func deleteSession(tokenHash: String) async throws {
        try await sql.raw("DELETE FROM sessions WHERE token_hash = \(bind: tokenHash)").run()
    }

    /// Device sessions end too: a password change, a lock or sign-out-everywhere must reach every device.
    package func deleteSessions(accountID: String, keeping: String?) async throws {
        try await database.writeTransaction { sql in
            try await Self.endSessions(sql, accountID: accountID, keeping: keeping)
        }
    }

    private static func endSessions(_ sql: any SQLDatabase, accountID: String, keeping: String?) async throws {
        try await sql.raw(
            "DELETE FROM sessions WHERE account_id = \(bind: accountID) AND token_hash <> \(bind: keeping ?? "")"
        ).run()
        try await sql.raw("DELETE FROM device_sessions WHERE account_id = \(bind: accountID)").run()
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

    package func record(
        accountID: String,
        kind: String,
        outcome: String,
        address: String,
        userAgent: String,
        at: Date
    ) async throws {
        try await Self.insertAudit(
            sql,
            AuditEntry(
                accountID: accountID,
                kind: kind,
                outcome: outcome,
                address: address,
                userAgent: userAgent,
                at: at
            )
        )
    }

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
