import Foundation

/// What finishing a check (a password, a passcode) did to the username's lockout state.
public enum SignInOutcome: Equatable, Sendable {
    /// The check passed; `.proceed` unless a lock or delay set meanwhile refuses it.
    case succeeded(LockoutPolicy.Gate)
    case failed(LockoutPolicy.Failure)
}

/// What `SignInStore.startSession` came to.
public enum SessionStart: Equatable, Sendable {
    case started
    /// The lockout state refuses the sign-in (`completeSignIn`'s gate: locked or delayed meanwhile).
    case refused(LockoutPolicy.Gate)
    /// The account's password hash is no longer the one the sign-in checked: a change landed meanwhile.
    case superseded
    /// The claim's record is no longer at the version read (another request collected it first, or it
    /// changed): nothing was written.
    case claimLost
}

/// The record a sign-in is collected from, spent in the same transaction as the session it gives: the
/// session starts only if the record is still at version `expected`, which then becomes `state`. So a
/// kill between "collected" and "session stored" cannot lose the sign-in (docs/SERVER.md, crash safety).
public enum SessionClaim: Sendable, Equatable {
    /// A second factor's MFA transaction (`mfa_transactions`), marked collected.
    case mfaTransaction(id: String, state: Data, expected: Int64)
    /// A QR sign-in's authentication code (`auth_codes`), marked collected.
    case authCode(hash: String, state: Data, expected: Int64)
}

/// The storage the sign-in needs: the username's lockout state (reserve a check, apply its outcome, give
/// it back), the session started in one transaction with the lockout reset, and the accounts it reads.
/// Each backend's storage implements it; each method is atomic.
public protocol SignInStore: Sendable {
    func account(username: String) async throws -> AccountRecord?
    func account(id: String) async throws -> AccountRecord?
    /// Replaces the hash only if it is still `old` (compare and set); false when it changed meanwhile.
    func replacePasswordHash(_ old: String, with new: String, accountID: String) async throws -> Bool

    /// Loads the username's lockout state, applies `reserve`, stores it: one transaction.
    func reserveSignIn(username: String, policy: LockoutPolicy, now: Date) async throws -> LockoutPolicy.Gate
    /// Applies the outcome of a check that `reserveSignIn` allowed: one transaction.
    func finishSignIn(
        username: String,
        check: LockoutPolicy.Check,
        policy: LockoutPolicy,
        now: Date
    ) async throws -> SignInOutcome
    /// Counts a failure that had no reservation (a denied push): one transaction.
    func countSignInFailure(username: String, policy: LockoutPolicy, now: Date) async throws -> LockoutPolicy.Failure
    /// A sign-in whose every factor passed: resets the count unless locked or delayed. One transaction.
    func completeSignIn(username: String, policy: LockoutPolicy, now: Date) async throws -> LockoutPolicy.Gate
    /// A sign-in whose every factor passed, in one transaction: unless the account's password hash is no
    /// longer `passwordHash`, or the session's passkey is gone (`.superseded`, nothing written), `completeSignIn`'s reset (or, without
    /// `resetsCount`, for a sign-in that checked no password, only its refusal while locked or delayed);
    /// then, unless the gate refuses, the session and its audit row. The hash and the lockout row are
    /// read under the transaction's locks, so a password change or a lock either lands first or after
    /// the session exists (and ends it). With a `claim`, its record is spent in the same transaction,
    /// after those checks and before the lockout write (`.claimLost`, nothing written, when it moved on).
    func startSession(
        _ session: SessionRecord,
        username: String,
        passwordHash: String,
        policy: LockoutPolicy,
        now: Date,
        audit: AuditEntry,
        resetsCount: Bool,
        claim: SessionClaim?
    ) async throws -> SessionStart
    /// Gives back a reservation whose check never ran; true when the username is locked after it
    /// (`LockoutPolicy.release`).
    func releaseSignIn(username: String, policy: LockoutPolicy, now: Date) async throws -> Bool
    func loginGuard(username: String) async throws -> LoginGuard?
    /// Whether the username is locked now, read after a write that a lock must not miss (a new device
    /// session): on PostgreSQL it waits for a lock in flight to commit (`FOR SHARE` on the lockout row).
    func isLocked(username: String) async throws -> Bool
}
