import Foundation

/// The account store's sign-in path on the direct connections (`DirectAccountStore`); the rest of
/// `AccountStore` is the shared SQL. Every writer of `login_guards` is here, so lockout transactions
/// never wait for the Fluent writer (`unlock` excepted: an administrator's one-off delete).
extension SQLiteStorage {
    package func account(username: String) async throws -> AccountRecord? {
        try await sessionReader.run {
            try DirectAccountStore.account($0, sql: DirectAccountStore.accountByUsername, key: username)
        }
    }

    package func account(id: String) async throws -> AccountRecord? {
        try await sessionReader.run { try DirectAccountStore.account($0, sql: DirectAccountStore.accountByID, key: id) }
    }

    package func loginGuard(username: String) async throws -> LoginGuard? {
        try await sessionReader.run { try DirectAccountStore.loginGuard($0, username: username) }
    }

    package func reserveSignIn(username: String, policy: LockoutPolicy, now: Date) async throws -> LockoutPolicy.Gate {
        try await sendWriter.write { try DirectAccountStore.withGuard($0, username) { policy.reserve(&$0, now: now) } }
    }

    package func finishSignIn(
        username: String,
        check: LockoutPolicy.Check,
        policy: LockoutPolicy,
        now: Date
    ) async throws -> SignInOutcome {
        try await sendWriter.write {
            try DirectAccountStore.withGuard($0, username) { policy.finish(&$0, check, now: now) }
        }
    }

    package func countSignInFailure(
        username: String,
        policy: LockoutPolicy,
        now: Date
    ) async throws -> LockoutPolicy.Failure {
        try await sendWriter.write {
            try DirectAccountStore.withGuard($0, username) { policy.countFailure(&$0, now: now) }
        }
    }

    package func completeSignIn(username: String, policy: LockoutPolicy, now: Date) async throws -> LockoutPolicy.Gate {
        try await sendWriter.write { try DirectAccountStore.withGuard($0, username) { policy.complete(&$0, now: now) } }
    }

    package func releaseSignIn(username: String, policy: LockoutPolicy, now: Date) async throws {
        try await sendWriter.write { try DirectAccountStore.withGuard($0, username) { policy.release(&$0, now: now) } }
    }

    package func createSession(_ session: SessionRecord) async throws {
        try await sendWriter.write { try DirectAccountStore.createSession($0, session) }
    }

    package func record(
        accountID: String,
        kind: String,
        outcome: String,
        address: String,
        userAgent: String,
        at: Date
    ) async throws {
        let entry = AuditEntry(
            accountID: accountID,
            kind: kind,
            outcome: outcome,
            address: address,
            userAgent: userAgent,
            at: at
        )
        try await sendWriter.write { try DirectAccountStore.record($0, entry) }
    }

    package func startSession(
        _ session: SessionRecord,
        username: String,
        passwordHash: String,
        policy: LockoutPolicy,
        now: Date,
        audit: AuditEntry
    ) async throws -> SessionStart {
        try await sendWriter.write {
            try DirectAccountStore.startSession(
                $0,
                session,
                username: username,
                passwordHash: passwordHash,
                policy: policy,
                now: now,
                audit: audit
            )
        }
    }
}
