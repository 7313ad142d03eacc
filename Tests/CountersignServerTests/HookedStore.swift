import CountersignAPI
import Foundation

@testable import CountersignServer

/// The real store with hooks run before `finishSignIn`, `startSession` and a rehash: lets a test land a
/// write (a password change, a lock) exactly while a password check is in flight, without timing races.
struct HookedStore: SignInStore {
    let base: any SignInStore
    var beforeStart: @Sendable (String) async throws -> Void = { _ in }
    let beforeFinish: @Sendable (String) async throws -> Void
    /// Run before `replacePasswordHash` (a rehash at sign-in), with the account's ID.
    var beforeReplace: @Sendable (String) async throws -> Void = { _ in }

    func finishSignIn(
        username: String,
        check: LockoutPolicy.Check,
        policy: LockoutPolicy,
        now: Date
    ) async throws -> SignInOutcome {
        try await beforeFinish(username)
        return try await base.finishSignIn(username: username, check: check, policy: policy, now: now)
    }
    func countSignInFailure(username: String, policy: LockoutPolicy, now: Date) async throws -> LockoutPolicy.Failure {
        try await base.countSignInFailure(username: username, policy: policy, now: now)
    }
    func completeSignIn(username: String, policy: LockoutPolicy, now: Date) async throws -> LockoutPolicy.Gate {
        try await base.completeSignIn(username: username, policy: policy, now: now)
    }

    func startSession(
        _ session: SessionRecord,
        username: String,
        passwordHash: String,
        policy: LockoutPolicy,
        now: Date,
        audit: AuditEntry,
        resetsCount: Bool,
        claim: SessionClaim?
    ) async throws -> SessionStart {
        try await beforeStart(username)
        return try await base.startSession(
            session,
            username: username,
            passwordHash: passwordHash,
            policy: policy,
            now: now,
            audit: audit,
            resetsCount: resetsCount,
            claim: claim
        )
    }

    func account(username: String) async throws -> AccountRecord? { try await base.account(username: username) }
    func account(id: String) async throws -> AccountRecord? { try await base.account(id: id) }
    func replacePasswordHash(_ old: String, with new: String, accountID: String) async throws -> Bool {
        try await beforeReplace(accountID)
        return try await base.replacePasswordHash(old, with: new, accountID: accountID)
    }
    func reserveSignIn(username: String, policy: LockoutPolicy, now: Date) async throws -> LockoutPolicy.Gate {
        try await base.reserveSignIn(username: username, policy: policy, now: now)
    }
    func releaseSignIn(username: String, policy: LockoutPolicy, now: Date) async throws -> Bool {
        try await base.releaseSignIn(username: username, policy: policy, now: now)
    }
    func loginGuard(username: String) async throws -> LoginGuard? { try await base.loginGuard(username: username) }
    func isLocked(username: String) async throws -> Bool { try await base.isLocked(username: username) }
}
