import CountersignAPI
import Foundation

/// The second factor's part of a sign-in: its codes checked and its failures counted under the same
/// lockout rule as passwords, and the session (or re-authentication) it completes.
extension SignInService {
    /// The session of a sign-in whose second factor (`method`) just completed.
    /// `passwordless`: a QR sign-in (the authenticator alone): its session has never had a full
    /// authentication, so anything behind re-authentication asks for the password (and second factor) first.
    /// `passwordTag`: the password the sign-in began with; a change since gives no session.
    func finishSecondFactor(
        accountID: String,
        method: SecondFactorMethod,
        passwordTag: String? = nil,
        origin: RequestOrigin,
        passwordless: Bool = false,
        passkeyID: String? = nil,
        claim: SessionClaim? = nil
    ) async throws -> NewSession {
        guard let account = try await store.account(id: accountID) else { throw RequestError.unauthenticated }
        try await requireSamePassword(account, passwordTag, .signIn, origin)
        // As a password sign-in's: a password change since the hash just read (which ended every session
        // but its own) gives no session either; a lock or delay refuses it. No password was checked in a
        // passwordless sign-in: the count stays.
        let session = try await storeSession(
            account,
            origin: origin,
            now: clock.now(),
            outcome: .succeeded(via: method),
            superseded: SignInError.superseded,
            passwordless: passwordless,
            passkeyID: passkeyID,
            claim: claim
        )
        if !passwordless { signInFailures.refund(origin.address, now: clock.now()) }
        return session
    }
    /// A denied or wrong-number push counts like a wrong password: whoever knows the password cannot
    /// keep prompting the owner for free. (Codes are counted as they are checked: `checkSecondFactor`.)
    func countSecondFactorFailure(accountID: String, outcome: AuditOutcome, origin: RequestOrigin) async throws {
        guard let account = try await store.account(id: accountID) else { return }
        let failure = try await store.countSignInFailure(
            username: account.username,
            policy: config.lockout,
            now: clock.now()
        )
        if failure == .locked { lockedOut(account.id) }
        try await audit.record(account.id, .signIn, outcome, origin)
    }
    /// What checking one second-factor code came to.
    enum FactorCheck: Equatable {
        case valid
        case wrong(LockoutPolicy.Failure)
    }
    /// Checks a passcode or recovery code under the account's lockout rule, as a password is checked:
    /// reserved first (refused while delayed or locked, or when as many checks are in flight as failures
    /// are left), then checked, then counted. A valid code is not yet a success: collecting the
    /// transaction completes the sign-in (`finishSecondFactor`).
    func checkSecondFactor(accountID: String, _ check: () async throws -> Bool) async throws -> FactorCheck {
        guard let account = try await store.account(id: accountID) else { throw RequestError.unauthenticated }
        switch try await store.reserveSignIn(username: account.username, policy: config.lockout, now: clock.now()) {
        case .proceed: break
        case .delayed(let until): throw SignInRefusal.delayed(until: until)
        case .locked:
            lockedOut(account.id)
            throw SignInRefusal.locked
        case .busy: throw SignInRefusal.busy
        }
        let valid: Bool
        let outcome: SignInOutcome
        do {
            do {
                valid = try await check()
            } catch {
                if try await release(username: account.username) { throw SignInRefusal.locked }
                throw error
            }
            outcome = try await finishReserved(
                username: account.username,
                check: valid ? .passedMoreToFollow : .failed
            )
        } catch SignInRefusal.locked {
            lockedOut(account.id)  // a check given back found the lock (`release`)
            throw SignInRefusal.locked
        }
        switch outcome {
        case .succeeded(.proceed): return .valid
        case .succeeded(.delayed(let until)): throw SignInRefusal.delayed(until: until)
        case .succeeded:
            lockedOut(account.id)
            throw SignInRefusal.locked
        case .failed(let failure):
            if failure == .locked { lockedOut(account.id) }
            return .wrong(failure)
        }
    }
    /// The second factor of a re-authentication is done: the session that asked counts as freshly
    /// authenticated, if it is still open.
    func finishReauthentication(
        tokenHash: String,
        accountID: String,
        method: SecondFactorMethod,
        passwordTag: String? = nil,
        origin: RequestOrigin
    ) async throws {
        let now = clock.now()
        try await sessions.liveSession(tokenHash: tokenHash, accountID: accountID)
        guard let account = try await store.account(id: accountID) else { throw RequestError.unauthenticated }
        try await requireSamePassword(account, passwordTag, .reauth, origin)
        try await complete(account, origin: origin)
        signInFailures.refund(origin.address, now: now)
        try await sessions.markReauthenticated(
            tokenHash: tokenHash,
            at: now,
            methods: SessionMethods.of(.succeeded(via: method), passwordless: false, passkey: method == .passkey)
        )
        try await audit.record(accountID, .reauth, .succeeded(via: method), origin)
    }
}
