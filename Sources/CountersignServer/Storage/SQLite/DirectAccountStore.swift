import CountersignAPI
import Foundation

/// The statements of every password sign-in on the direct connections (`SQLiteStorage+Accounts.swift`
/// runs them): the account and the lockout row are read on a direct reader; the lockout transactions,
/// the new session and its audit row go into the direct writer's group commits (`SQLiteWorker.write`),
/// each in a savepoint of its own, and so do what must order against them: password changes and the
/// ends of sessions. Through Fluent, each of a sign-in's ~20 statements was prepared again and cost
/// several thread hand-offs; here each store call is one hop with statements prepared once. PostgreSQL's sign-in path
/// (`PostgresStorage+Accounts.swift`) reads and writes the same rows, with row locks instead of the
/// writer's file lock.
enum DirectAccountStore {
    static let accountColumns = "id, username, name, lastname, password_hash, reauth_minutes, created_at"
    static let accountByUsername = "SELECT \(accountColumns) FROM accounts WHERE username = ?1"
    static let accountByID = "SELECT \(accountColumns) FROM accounts WHERE id = ?1"
    static let guardByUsername = """
        SELECT failures, pending, pending_expires_at, delayed_until, locked FROM login_guards WHERE username = ?1
        """
    static let upsertGuard = """
        INSERT INTO login_guards (username, failures, pending, pending_expires_at, delayed_until, locked)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6)
        ON CONFLICT (username) DO UPDATE SET failures = excluded.failures, pending = excluded.pending,
            pending_expires_at = excluded.pending_expires_at, delayed_until = excluded.delayed_until, locked = excluded.locked
        """
    static let insertSession = """
        INSERT INTO sessions (token_hash, account_id, created_at, last_used_at, authenticated_at, expires_at, address, user_agent, passkey_id, binding_id, amr)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
        """
    static let insertAudit = """
        INSERT INTO audit_events (account_id, at, kind, outcome, address, user_agent) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
        """

    static let setHash = "UPDATE accounts SET password_hash = ?2 WHERE id = ?1"
    static let replaceHash = "UPDATE accounts SET password_hash = ?3 WHERE id = ?1 AND password_hash = ?2 RETURNING id"
    static let deleteSession = "DELETE FROM sessions WHERE token_hash = ?1"
    static let deleteOtherSessions = "DELETE FROM sessions WHERE account_id = ?1 AND token_hash <> ?2"
    static let deleteBindings = "DELETE FROM session_bindings WHERE account_id = ?1"
    static let deleteDeviceSessions = "DELETE FROM device_sessions WHERE account_id = ?1"
    static let passkeyOfAccount = "SELECT id FROM passkeys WHERE id = ?1 AND account_id = ?2"
    static let deleteBindingsOfUsername =
        "DELETE FROM session_bindings WHERE account_id IN (SELECT id FROM accounts WHERE username = ?1)"
    static let deleteSessionsOfUsername =
        "DELETE FROM sessions WHERE account_id IN (SELECT id FROM accounts WHERE username = ?1)"
    static let deleteDeviceSessionsOfUsername =
        "DELETE FROM device_sessions WHERE account_id IN (SELECT id FROM accounts WHERE username = ?1)"
    static let deletePairingKeysOfUsername =
        "DELETE FROM pairing_keys WHERE account_id IN (SELECT id FROM accounts WHERE username = ?1)"

    static func account(_ c: DirectSQLite, sql: String, key: String) throws -> AccountRecord? {
        let s = try c.statement(sql)
        s.bind(1, key)
        var found: AccountRecord?
        try s.forEach { found = account($0, from: 0) }
        return found
    }

    /// The account in the row's columns `first`… in `accountColumns` order (here and in the device-session
    /// read, `SessionContextQuery`).
    static func account(_ r: DirectStatement, from first: Int32) -> AccountRecord {
        AccountRecord(
            id: r.string(first),
            username: r.string(first + 1),
            name: r.string(first + 2),
            lastname: r.string(first + 3),
            passwordHash: r.string(first + 4),
            reauthMinutes: Int(r.int64(first + 5)),
            createdAt: Date(ms: r.int64(first + 6))
        )
    }

    static func loginGuard(_ c: DirectSQLite, username: String) throws -> LoginGuard? {
        let s = try c.statement(guardByUsername)
        s.bind(1, username)
        var found: LoginGuard?
        try s.forEach { r in
            found = LoginGuard(
                failures: Int(r.int64(0)),
                pending: Int(r.int64(1)),
                pendingExpiresAt: r.isNull(2) ? nil : Date(ms: r.int64(2)),
                delayedUntil: r.isNull(3) ? nil : Date(ms: r.int64(3)),
                locked: r.int64(4) != 0
            )
        }
        return found
    }

    /// Runs `change` on the username's lockout state (a fresh one when it has no row) in one write
    /// transaction, and stores the state when it changed (a new row always, as PostgreSQL's).
    static func withGuard<T>(_ c: DirectSQLite, _ username: String, _ change: (inout LoginGuard) -> T) throws -> T {
        try c.writeTransaction { try changeGuard(c, username, change) }
    }

    /// `withGuard`'s body, inside the caller's write transaction: it holds the write lock from its start
    /// (BEGIN IMMEDIATE, or the group's), so no other writer changes the row between the read and the write.
    /// A change that locks the username ends its account's sessions in the same transaction
    /// (`LoginGuard.locks`).
    static func changeGuard<T>(
        _ c: DirectSQLite,
        _ username: String,
        _ change: (inout LoginGuard) -> T
    ) throws
        -> T
    {
        let before = try loginGuard(c, username: username)
        var state = before ?? LoginGuard()
        let result = change(&state)
        if state != before {
            let s = try c.statement(upsertGuard)
            s.bind(1, username)
            s.bind(2, Int64(state.failures))
            s.bind(3, Int64(state.pending))
            s.bind(4, state.pendingExpiresAt?.ms)
            s.bind(5, state.delayedUntil?.ms)
            s.bind(6, Int64(state.locked ? 1 : 0))
            try s.run()
        }
        if LoginGuard.locks(from: before, to: state) {
            for sql in [
                deletePairingKeysOfUsername, deleteBindingsOfUsername, deleteSessionsOfUsername,
                deleteDeviceSessionsOfUsername,
            ] {
                let d = try c.statement(sql)
                d.bind(1, username)
                try d.run()
            }
        }
        return result
    }

    /// Whether the account still has the passkey.
    static func passkeyExists(_ c: DirectSQLite, id: String, accountID: String) throws -> Bool {
        let s = try c.statement(passkeyOfAccount)
        s.bind(1, id)
        s.bind(2, accountID)
        var found = false
        try s.forEach { _ in found = true }
        return found
    }

    /// Compare-and-set of the claim's record (as PostgreSQL's `spend`); false when it moved on.
    static func spend(_ c: DirectSQLite, _ claim: SessionClaim) throws -> Bool {
        let (sql, key, state, expected) =
            switch claim {
            case .mfaTransaction(let id, let state, let expected): (spendTransaction, id, state, expected)
            case .authCode(let hash, let state, let expected): (spendAuthCode, hash, state, expected)
            }
        let s = try c.statement(sql)
        s.bind(1, String(decoding: state, as: UTF8.self))
        s.bind(2, key)
        s.bind(3, expected)
        var spent = false
        try s.forEach { _ in spent = true }
        return spent
    }
    static let spendTransaction =
        "UPDATE mfa_transactions SET state = ?1, version = version + 1 WHERE id = ?2 AND version = ?3 RETURNING version"
    static let spendAuthCode =
        "UPDATE auth_codes SET state = ?1, version = version + 1 WHERE code_hash = ?2 AND version = ?3 RETURNING version"

    /// Sets the hash, or with `old` replaces it only if it is still `old` (compare and set); true when it changed.
    static func setPasswordHash(_ c: DirectSQLite, _ hash: String, accountID: String, old: String?) throws -> Bool {
        try c.writeTransaction {
            guard let old else {
                let s = try c.statement(setHash)
                s.bind(1, accountID)
                s.bind(2, hash)
                try s.run()
                return true
            }
            let s = try c.statement(replaceHash)
            s.bind(1, accountID)
            s.bind(2, old)
            s.bind(3, hash)
            var replaced = false
            try s.forEach { _ in replaced = true }
            return replaced
        }
    }

    /// A password change in one transaction: the hash, then every session but `keeping` ended.
    static func changePassword(_ c: DirectSQLite, _ hash: String, accountID: String, keeping: String) throws {
        try c.writeTransaction {
            let s = try c.statement(setHash)
            s.bind(1, accountID)
            s.bind(2, hash)
            try s.run()
            try endSessions(c, tokenHash: nil, accountID: accountID, keeping: keeping)
        }
    }

    /// One session, or (`accountID`) every session of the account but `keeping` and all its device sessions.
    static func deleteSessions(_ c: DirectSQLite, tokenHash: String?, accountID: String?, keeping: String?) throws {
        try c.writeTransaction { try endSessions(c, tokenHash: tokenHash, accountID: accountID, keeping: keeping) }
    }

    private static func endSessions(_ c: DirectSQLite, tokenHash: String?, accountID: String?, keeping: String?) throws
    {
        if let tokenHash {
            let s = try c.statement(deleteSession)
            s.bind(1, tokenHash)
            try s.run()
        }
        if let accountID {
            // Bindings first (PostgreSQL's order, where it matters): no browser resumes what this ends.
            let b = try c.statement(deleteBindings)
            b.bind(1, accountID)
            try b.run()
            let s = try c.statement(deleteOtherSessions)
            s.bind(1, accountID)
            s.bind(2, keeping ?? "")  // token hashes are 64 hex digits: "" keeps none
            try s.run()
            let d = try c.statement(deleteDeviceSessions)
            d.bind(1, accountID)
            try d.run()
        }
    }

    static func record(_ c: DirectSQLite, _ entry: AuditEntry) throws {
        try c.writeTransaction { try insert(c, entry) }
    }

    static func insert(_ c: DirectSQLite, _ session: SessionRecord) throws {
        let s = try c.statement(insertSession)
        s.bind(1, session.tokenHash)
        s.bind(2, session.accountID)
        s.bind(3, session.createdAt.ms)
        s.bind(4, session.lastUsedAt.ms)
        s.bind(5, session.authenticatedAt.ms)
        s.bind(6, session.expiresAt.ms)
        s.bind(7, session.address)
        s.bind(8, session.userAgent)
        s.bind(9, session.passkeyID)
        s.bind(10, session.bindingID)
        s.bind(11, SessionMethods.text(session.methods))
        try s.run()
    }

    static func insert(_ c: DirectSQLite, _ e: AuditEntry) throws {
        let s = try c.statement(insertAudit)
        s.bind(1, e.accountID)
        s.bind(2, e.at.ms)
        s.bind(3, e.kind)
        s.bind(4, e.outcome)
        s.bind(5, e.address)
        s.bind(6, e.userAgent)
        try s.run()
    }
}
