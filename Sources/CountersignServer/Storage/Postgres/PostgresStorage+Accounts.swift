import CountersignAPI
import FluentKit
import Foundation
import SQLKit

/// The account store's sign-in path on PostgreSQL, on the pool (SQLite's is `SQLiteStorage+Accounts.swift`):
/// the account and lockout reads, the lockout transactions and the session start, password changes and
/// the ends of sessions that race them, the audit row. The rest of `AccountStore` is the shared SQL
/// (`SQLStores+Accounts.swift`). A lockout update is a read-modify-write inside one transaction that
/// locks the row (`FOR UPDATE`), so the nodes sharing the database never interleave two of them.
extension PostgresStorage {

    // MARK: Accounts

    package func account(username: String) async throws -> AccountRecord? {
        try await sql.raw("SELECT * FROM accounts WHERE username = \(bind: username)").first().map(Self.account)
    }

    package func account(id: String) async throws -> AccountRecord? {
        try await sql.raw("SELECT * FROM accounts WHERE id = \(bind: id)").first().map(Self.account)
    }

    package func setPasswordHash(_ hash: String, accountID: String) async throws {
        try await sql.raw("UPDATE accounts SET password_hash = \(bind: hash) WHERE id = \(bind: accountID)").run()
    }

    package func changePassword(_ hash: String, accountID: String, keepingSession: String) async throws {
        try await writeTransaction { sql in
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

    // MARK: Lockout

    package func loginGuard(username: String) async throws -> LoginGuard? {
        try await sql.raw("SELECT * FROM login_guards WHERE username = \(bind: username)").first().map(Self.loginGuard)
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

    /// Runs `change` on the username's guard inside one transaction, creating the row when absent.
    private func withGuard<T: Sendable>(
        _ username: String,
        _ change: @escaping @Sendable (inout LoginGuard) -> T
    ) async throws -> T {
        try await writeTransaction { sql in try await Self.changeGuard(sql, username, change) }
    }

    /// `withGuard`'s body, inside the caller's transaction. A change that locks the username ends its
    /// account's sessions in the same transaction (`LoginGuard.locks`).
    private static func changeGuard<T: Sendable>(
        _ sql: any SQLDatabase,
        _ username: String,
        _ change: (inout LoginGuard) -> T
    ) async throws -> T {
        try await sql.raw(
            """
            INSERT INTO login_guards (username, failures, pending, locked) VALUES (\(bind: username), 0, 0, 0)
            ON CONFLICT (username) DO NOTHING
            """
        ).run()
        guard
            let row = try await sql.raw("SELECT * FROM login_guards WHERE username = \(bind: username) FOR UPDATE")
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
            // Pairing keys first: this waits for a pairing that is spending one, so the deletes below see
            // the device session it stores.
            // Bindings before sessions (a resumption holding its binding's row lock commits first, and the
            // sessions delete then sees its session) and after (a bind holding its session's row lock commits
            // first, and this delete then sees its binding).
            try await sql.raw(
                "SELECT id FROM accounts WHERE username = \(bind: username) FOR UPDATE"
            ).run()  // serialised with binds, as every ending is
            for table in ["pairing_keys", "session_bindings", "sessions", "session_bindings", "device_sessions"] {
                try await sql.raw(
                    """
                    DELETE FROM \(unsafeRaw: table) WHERE account_id IN (SELECT id FROM accounts WHERE username = \(bind: username))
                    """
                ).run()
            }
        }
        return result
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

    package func releaseSignIn(username: String, policy: LockoutPolicy, now: Date) async throws -> Bool {
        try await withGuard(username) { policy.release(&$0, now: now) }
    }

    // MARK: Sessions

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
        try await writeTransaction { sql in
            // FOR SHARE: a password change's UPDATE waits for this transaction, so the sessions it then
            // ends include this one; an UPDATE in flight makes this read wait and see its hash. Checked
            // before anything is written: a check made with a changed password resets no count.
            let current = try await sql.raw(
                "SELECT password_hash FROM accounts WHERE id = \(bind: session.accountID) FOR SHARE"
            ).first()?.decode(column: "password_hash", as: String.self)
            guard current == passwordHash else { return .superseded }
            // A passkey removed meanwhile ended the sessions it made; it makes none after (FOR SHARE: a
            // removal's DELETE waits, and its sweep then sees this session).
            if let passkeyID = session.passkeyID,
                try await sql.raw(
                    """
                    SELECT id FROM passkeys WHERE id = \(bind: passkeyID) AND account_id = \(bind: session.accountID) FOR SHARE
                    """
                ).first() == nil
            {
                return .superseded
            }
            if let claim, try await !Self.spend(sql, claim) { return .claimLost }
            let gate = try await Self.changeGuard(sql, username) {
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

    package func deleteSession(tokenHash: String) async throws {
        try await sql.raw("DELETE FROM sessions WHERE token_hash = \(bind: tokenHash)").run()
    }

    /// Device sessions end too: a password change, a lock or sign-out-everywhere must reach every device.
    package func deleteSessions(accountID: String, keeping: String?) async throws {
        try await writeTransaction { sql in
            try await Self.endSessions(sql, accountID: accountID, keeping: keeping)
        }
    }

    private static func endSessions(_ sql: any SQLDatabase, accountID: String, keeping: String?) async throws {
        // The account's row first: a bind racing this ending waits, or has committed (SQLStores+SessionBindings).
        _ = try await sql.lockAccount(accountID, .postgres)
        // Bindings first: see `withGuard`'s lock.
        try await sql.raw("DELETE FROM session_bindings WHERE account_id = \(bind: accountID)").run()
        try await sql.raw(
            "DELETE FROM sessions WHERE account_id = \(bind: accountID) AND token_hash <> \(bind: keeping ?? "")"
        ).run()
        // Again after: a bind that held a session's row lock has committed by now.
        try await sql.raw("DELETE FROM session_bindings WHERE account_id = \(bind: accountID)").run()
        try await sql.raw("DELETE FROM device_sessions WHERE account_id = \(bind: accountID)").run()
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
}
