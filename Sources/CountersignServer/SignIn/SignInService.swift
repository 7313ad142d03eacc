import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import Logging

/// The sign-in ceremony's rules: the lockout gate, captcha and password (with unknown usernames going
/// through the same states, writes and time as real ones), the second factor's checks and counting, and
/// starting the session in one transaction with the lockout reset. Password sign-in and re-authentication
/// are driven by `SignInFlow`; the second factor's feature (MFA), passkeys and QR sign-in finish through
/// `finishSecondFactor` and `finishReauthentication`. Clock and randomness are injected; nothing here
/// knows about HTTP.
public final class SignInService: Sendable {
    let store: any SignInStore
    let sessions: SessionService
    let audit: AuditLog
    let config: ServerConfiguration
    let clock: any WallClock
    let captcha: CaptchaGate
    let hashing: PasswordHashing
    /// Sign-in attempts per address: one token per attempt, given back when it succeeds.
    let signInFailures: AddressThrottle
    let recentFailures: RecentFailures

    init(
        store: any SignInStore,
        sessions: SessionService,
        audit: AuditLog,
        config: ServerConfiguration,
        clock: any WallClock,
        captcha: CaptchaGate,
        hashing: PasswordHashing
    ) {
        self.store = store
        self.sessions = sessions
        self.audit = audit
        self.config = config
        self.clock = clock
        self.captcha = captcha
        self.hashing = hashing
        signInFailures = AddressThrottle(config.signInFailuresPerAddress)
        recentFailures = RecentFailures(window: config.riskMemory)
    }

    /// Checks a sign-in's captcha and password under the lockout rule. Unknown usernames go through the
    /// same lockout states, answers, writes and password-hash time as real ones. The lockout count and
    /// this address's token stay as they are until `complete` (a second factor may still be pending).
    package func verifySignIn(
        username rawUsername: String,
        password: String,
        captcha: String?,
        origin: RequestOrigin
    ) async throws -> VerifiedPassword {
        let now = clock.now()
        let username = (try? Username(parsing: rawUsername))?.text ?? ""
        try await admit(username: username, captcha: captcha, origin: origin, now: now)
        var refund = false
        defer { if refund { signInFailures.refund(origin.address, now: clock.now()) } }
        guard !username.isEmpty else {
            // No account can have this name: the same work and answer as a wrong password.
            _ = try? await hashing.verify(password, hashing.dummyHash)
            recentFailures.record(address: origin.address, username: nil, now: clock.now())
            throw SignInError.invalidCredentials(delayedUntil: nil, locked: false)
        }
        let account = try await store.account(username: username)
        let auditID = account?.id ?? AuditEvent.unknownAccountID
        let verifiedHash = account?.passwordHash ?? hashing.dummyHash
        let result: CheckResult
        do {
            result = try await checkUnderLockout(
                username: username,
                password: password,
                against: verifiedHash,
                accountID: account?.id
            )
        } catch RequestError.serverBusy {
            refund = true  // not an attempt: the server never looked at the password
            throw RequestError.serverBusy
        }
        switch result {
        case .matched, .refused(_, outcome: nil): break
        case .failed, .refused: recentFailures.record(address: origin.address, username: username, now: clock.now())
        }
        switch result {
        case .refused(let error, let outcome):
            if error == .locked, let account { lockedOut(account.id) }
            if let outcome { try await audit.record(auditID, .signIn, outcome, origin) }
            throw error
        case .failed(.locked):
            if let account { lockedOut(account.id) }
            try await audit.record(auditID, .signIn, .wrongPasswordLocked, origin)
            throw SignInError.invalidCredentials(delayedUntil: nil, locked: true)
        case .failed(let failure):
            let lastBeforeLock = config.lockout.oneMoreLocks(failure)
            if case .delayed(let until, _) = failure {
                try await audit.record(auditID, .signIn, .wrongPasswordDelayed, origin)
                throw SignInError.invalidCredentials(delayedUntil: until, locked: false, oneMoreLocks: lastBeforeLock)
            }
            try await audit.record(auditID, .signIn, .wrongPassword, origin)
            throw SignInError.invalidCredentials(delayedUntil: nil, locked: false, oneMoreLocks: lastBeforeLock)
        case .matched:
            break
        }
        let after = clock.now()
        guard let account else { throw SignInError.invalidCredentials(delayedUntil: nil, locked: false) }
        var currentHash = verifiedHash
        if config.hasher.needsRehash(verifiedHash) {
            let rehashed = try await hashing.hash(password)
            // Only if the password did not change meanwhile: never write an old password's hash back.
            if try await store.replacePasswordHash(verifiedHash, with: rehashed, accountID: account.id) {
                currentHash = rehashed
            } else if let stored = try await store.account(id: account.id)?.passwordHash, stored != verifiedHash {
                // Another sign-in with this password may have rehashed it first (two devices at once, after
                // the parameters were raised): the same password goes on, not superseded. A full hash queue
                // answers 503 as anywhere.
                if try await verifies(password, stored) { currentHash = stored }
            }
        }
        var begun = account
        begun.passwordHash = currentHash
        return VerifiedPassword(purpose: .signIn, account: begun, origin: origin, at: after)
    }
    /// A verified password with a second factor to finish: not a success yet. The lockout count stays,
    /// and so does this address's token until the second factor is done (`finishSecondFactor` and
    /// `finishReauthentication` give it back).
    package func pending(_ verified: VerifiedPassword) async throws {
        try await audit.record(verified.account.id, verified.kind, .secondFactorPending, verified.origin)
    }
    /// A verified sign-in that needs no second factor gets its session; the lockout count is reset and
    /// this address's token given back.
    package func completeSignIn(_ verified: VerifiedPassword) async throws -> NewSession {
        precondition(verified.purpose == .signIn, "a re-authentication is completed by completeReauthentication")
        // The count resets, and the session and its audit row are stored only if the password is still
        // the one checked (a change that landed meanwhile ended every session but its own; one made with
        // the old password must not outlive it).
        let session = try await storeSession(
            verified.account,
            origin: verified.origin,
            now: verified.at,
            outcome: .success,
            superseded: SignInError.invalidCredentials(delayedUntil: nil, locked: false)
        )
        signInFailures.refund(verified.origin.address, now: clock.now())
        return session
    }
    /// A sign-up that asked to be signed in (`RegisterRequest.signIn`) gets the new account's first session:
    /// its password was set in the same request, and the account has no second factor yet. Audited as a
    /// sign-in.
    package func startAfterRegistration(_ account: AccountRecord, origin: RequestOrigin) async throws -> NewSession {
        try await storeSession(
            account,
            origin: origin,
            now: clock.now(),
            outcome: .success,
            superseded: RequestError.unauthenticated
        )
    }
    /// A verified re-authentication that needs no second factor marks its session as freshly
    /// authenticated; the lockout count is reset and this address's token given back.
    package func completeReauthentication(_ verified: VerifiedPassword) async throws {
        guard case .reauthentication(let tokenHash) = verified.purpose else {
            preconditionFailure("a sign-in is completed by completeSignIn")
        }
        try await complete(verified.account, origin: verified.origin)
        signInFailures.refund(verified.origin.address, now: clock.now())
        try await sessions.markReauthenticated(
            tokenHash: tokenHash,
            at: clock.now(),
            methods: SessionMethods.passwordOnly
        )
        try await audit.record(verified.account.id, .reauth, .success, verified.origin)
    }
    /// Names the password hash a sign-in began with, without keeping the hash itself in the transaction.
    static func passwordTag(_ hash: String) -> String {
        Hex.encode(SHA256.hash(data: Array(("countersign password tag\0" + hash).utf8)).prefix(16))
    }
    /// Refuses, audited as `kind` (`refused-superseded`), a sign-in or re-authentication begun with a
    /// password the account no longer has (`tag`; nil when none was given).
    func requireSamePassword(
        _ account: AccountRecord,
        _ tag: String?,
        _ kind: AuditKind,
        _ origin: RequestOrigin
    ) async throws {
        guard let tag, Self.passwordTag(account.passwordHash) != tag else { return }
        // Best effort: a failed audit write must not turn the refusal into a server error.
        try? await audit.record(account.id, kind, .refusedSuperseded, origin)
        throw SignInError.superseded
    }
    /// The captcha policy for a password check of `username` (empty: no valid name) from `origin`: `risk`
    /// asks after a failure for that username or from that address. Sign-in and re-authentication share it.
    func captchaRequired(username: String, origin: RequestOrigin, now: Date) async throws -> Bool {
        switch config.captcha {
        case .always: return true
        case .off: return false
        case .risk:
            let guardFailures = username.isEmpty ? 0 : (try await store.loginGuard(username: username)?.failures ?? 0)
            return guardFailures > 0 || recentFailures.contains(address: origin.address, username: username, now: now)
        }
    }
    /// Re-authentication obeys sign-in's limits: the same lockout count, the same per-address tokens
    /// and the same captcha rule, so a stolen session is not a cheaper way to guess. With a second
    /// factor, the password alone re-authenticates nothing: finishing its transaction does.
    package func verifyReauthentication(
        _ auth: Authenticated,
        password: String,
        captcha: String? = nil,
        origin: RequestOrigin
    ) async throws -> VerifiedPassword {
        let now = clock.now()
        try await admit(username: auth.account.username, captcha: captcha, origin: origin, now: now)
        var refund = false
        defer { if refund { signInFailures.refund(origin.address, now: clock.now()) } }
        do {
            try await checkPassword(password, auth, origin: origin, kind: .reauth)
        } catch RequestError.serverBusy {
            refund = true
            throw RequestError.serverBusy
        } catch SignInError.wrongPassword {
            recentFailures.record(address: origin.address, username: auth.account.username, now: clock.now())
            throw SignInError.wrongPassword
        }
        // Read again: the check may have rehashed the password, and the tag must be of the stored hash.
        let account = try await store.account(id: auth.account.id) ?? auth.account
        return VerifiedPassword(
            purpose: .reauthentication(tokenHash: auth.session.tokenHash),
            account: account,
            origin: origin,
            at: clock.now()
        )
    }

    /// Takes this address's token for one password attempt, before any work, and checks the captcha the
    /// policy asks for. The token is given back only when the attempt succeeds, or never became one: a
    /// missing or bad captcha costs the server nothing.
    private func admit(username: String, captcha: String?, origin: RequestOrigin, now: Date) async throws {
        let needed = try await captchaRequired(username: username, origin: origin, now: now)
        if let wait = signInFailures.take(origin.address, now: now) { throw RequestError.rateLimited(retryAfter: wait) }
        do {
            try await self.captcha.check(captcha, required: needed)
        } catch {
            signInFailures.refund(origin.address, now: clock.now())
            throw error
        }
    }
}
