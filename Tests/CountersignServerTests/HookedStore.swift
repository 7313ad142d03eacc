import CountersignAPI
import Foundation

@testable import CountersignServer

/// The real store with hooks run before `finishSignIn`, `startSession` and a rehash: lets a test land a
/// write (a password change, a lock) exactly while a password check is in flight, without timing races.
struct HookedStore: AccountStore {
    let base: any AccountStore
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

    func createAccount(_ account: AccountRecord) async throws { try await base.createAccount(account) }
    func account(username: String) async throws -> AccountRecord? { try await base.account(username: username) }
    func account(id: String) async throws -> AccountRecord? { try await base.account(id: id) }
    func usernames(limit: Int) async throws -> [String] { try await base.usernames(limit: limit) }
    func accounts(usernames: [String]) async throws -> [AccountRecord] { try await base.accounts(usernames: usernames) }
    func setPasswordHash(_ hash: String, accountID: String) async throws {
        try await base.setPasswordHash(hash, accountID: accountID)
    }
    func changePassword(_ hash: String, accountID: String, keepingSession: String) async throws {
        try await base.changePassword(hash, accountID: accountID, keepingSession: keepingSession)
    }
    func replacePasswordHash(_ old: String, with new: String, accountID: String) async throws -> Bool {
        try await beforeReplace(accountID)
        return try await base.replacePasswordHash(old, with: new, accountID: accountID)
    }
    func setReauthMinutes(_ minutes: Int, accountID: String) async throws {
        try await base.setReauthMinutes(minutes, accountID: accountID)
    }
    func reserveSignIn(username: String, policy: LockoutPolicy, now: Date) async throws -> LockoutPolicy.Gate {
        try await base.reserveSignIn(username: username, policy: policy, now: now)
    }
    func releaseSignIn(username: String, policy: LockoutPolicy, now: Date) async throws -> Bool {
        try await base.releaseSignIn(username: username, policy: policy, now: now)
    }
    func unlock(username: String) async throws -> Bool { try await base.unlock(username: username) }
    func loginGuard(username: String) async throws -> LoginGuard? { try await base.loginGuard(username: username) }
    func isLocked(username: String) async throws -> Bool { try await base.isLocked(username: username) }
    func createSession(_ session: SessionRecord) async throws { try await base.createSession(session) }
    func session(tokenHash: String) async throws -> SessionRecord? { try await base.session(tokenHash: tokenHash) }
    func touchSession(tokenHash: String, at: Date) async throws {
        try await base.touchSession(tokenHash: tokenHash, at: at)
    }
    func markReauthenticated(tokenHash: String, at: Date) async throws {
        try await base.markReauthenticated(tokenHash: tokenHash, at: at)
    }
    func deleteSession(tokenHash: String) async throws { try await base.deleteSession(tokenHash: tokenHash) }
    func deleteSessions(accountID: String, keeping: String?) async throws {
        try await base.deleteSessions(accountID: accountID, keeping: keeping)
    }
    func purgeExpired(now: Date, idle: TimeInterval) async throws { try await base.purgeExpired(now: now, idle: idle) }
    func spendCaptcha(challenge: String, expiresAt: Date) async throws -> Bool {
        try await base.spendCaptcha(challenge: challenge, expiresAt: expiresAt)
    }
    func serverSecret(name: String, create: @Sendable () -> [UInt8]) async throws -> [UInt8] {
        try await base.serverSecret(name: name, create: create)
    }
}
