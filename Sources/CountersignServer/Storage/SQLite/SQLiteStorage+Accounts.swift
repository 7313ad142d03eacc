import Foundation

/// The account store's sign-in path on the direct connections (`DirectAccountStore`), with the password
/// changes and session ends that race it (PostgreSQL's: `PostgresStorage+Accounts.swift`); the rest of
/// `AccountStore` is the shared SQL (`SQLStores+Accounts.swift`) on the Fluent writer. Both writers take the file's one write lock for a whole transaction (BEGIN IMMEDIATE), so a
/// lockout read-modify-write never interleaves with another writer's; moving the sign-in's writes and
/// their racers to one connection keeps them from waiting on each other through SQLite's busy handler.
extension SQLiteStorage {
    package func setPasswordHash(_ hash: String, accountID: String) async throws {
        _ = try await messageAndSignInWriter.write {
            try DirectAccountStore.setPasswordHash($0, hash, accountID: accountID, old: nil)
        }
    }

    package func changePassword(_ hash: String, accountID: String, keepingSession: String) async throws {
        try await messageAndSignInWriter.write {
            try DirectAccountStore.changePassword($0, hash, accountID: accountID, keeping: keepingSession)
        }
    }

    package func replacePasswordHash(_ old: String, with new: String, accountID: String) async throws -> Bool {
        try await messageAndSignInWriter.write {
            try DirectAccountStore.setPasswordHash($0, new, accountID: accountID, old: old)
        }
    }

    package func deleteSession(tokenHash: String) async throws {
        try await messageAndSignInWriter.write {
            try DirectAccountStore.deleteSessions($0, tokenHash: tokenHash, accountID: nil, keeping: nil)
        }
    }

    package func deleteSessions(accountID: String, keeping: String?) async throws {
        try await messageAndSignInWriter.write {
            try DirectAccountStore.deleteSessions($0, tokenHash: nil, accountID: accountID, keeping: keeping)
        }
    }

    package func account(username: String) async throws -> AccountRecord? {
        try await quickRead {
            try DirectAccountStore.account($0, sql: DirectAccountStore.accountByUsername, key: username)
        }
    }

    package func account(id: String) async throws -> AccountRecord? {
        try await quickRead { try DirectAccountStore.account($0, sql: DirectAccountStore.accountByID, key: id) }
    }

    package func loginGuard(username: String) async throws -> LoginGuard? {
        try await quickRead { try DirectAccountStore.loginGuard($0, username: username) }
    }

    package func reserveSignIn(username: String, policy: LockoutPolicy, now: Date) async throws -> LockoutPolicy.Gate {
        try await messageAndSignInWriter.write {
            try DirectAccountStore.withGuard($0, username) { policy.reserve(&$0, now: now) }
        }
    }

    package func finishSignIn(
        username: String,
        check: LockoutPolicy.Check,
        policy: LockoutPolicy,
        now: Date
    ) async throws -> SignInOutcome {
        try await messageAndSignInWriter.write {
            try DirectAccountStore.withGuard($0, username) { policy.finish(&$0, check, now: now) }
        }
    }

    package func countSignInFailure(
        username: String,
        policy: LockoutPolicy,
        now: Date
    ) async throws -> LockoutPolicy.Failure {
        try await messageAndSignInWriter.write {
            try DirectAccountStore.withGuard($0, username) { policy.countFailure(&$0, now: now) }
        }
    }

    package func completeSignIn(username: String, policy: LockoutPolicy, now: Date) async throws -> LockoutPolicy.Gate {
        try await messageAndSignInWriter.write {
            try DirectAccountStore.withGuard($0, username) { policy.complete(&$0, now: now) }
        }
    }

    package func releaseSignIn(username: String, policy: LockoutPolicy, now: Date) async throws -> Bool {
        try await messageAndSignInWriter.write {
            try DirectAccountStore.withGuard($0, username) { policy.release(&$0, now: now) }
        }
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
        try await messageAndSignInWriter.write { try DirectAccountStore.record($0, entry) }
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
        // One write transaction on the direct writer, whose lock orders it against any password change.
        try await messageAndSignInWriter.write { c in
            try c.writeTransaction {
                let current = try DirectAccountStore.account(
                    c,
                    sql: DirectAccountStore.accountByID,
                    key: session.accountID
                )
                guard current?.passwordHash == passwordHash else { return .superseded }
                // A passkey removed meanwhile ended the sessions it made; it makes none after.
                if let passkeyID = session.passkeyID,
                    try !DirectAccountStore.passkeyExists(c, id: passkeyID, accountID: session.accountID)
                {
                    return .superseded
                }
                if let claim, try !DirectAccountStore.spend(c, claim) { return .claimLost }
                let gate = try DirectAccountStore.changeGuard(c, username) {
                    resetsCount ? policy.complete(&$0, now: now) : policy.gate(&$0, now: now)
                }
                guard gate == .proceed else { return .refused(gate) }
                try DirectAccountStore.insert(c, session)
                try DirectAccountStore.insert(c, audit)
                return .started
            }
        }
    }
}
