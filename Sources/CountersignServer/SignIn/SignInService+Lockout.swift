import CountersignAPI
import Foundation

/// Every password check under the lockout rule, the gate's refusals (audited, and ending the account's
/// sessions when it locks), and the session started in one transaction with the lockout reset.
extension SignInService {
    /// Stores a reserved check's outcome. When the database cannot take it (busy under load: the caller
    /// answers 503 and learns nothing of the check), the reservation is given back, as for a check that
    /// never ran: left pending it would hold later attempts as in flight until it expired. Throws
    /// `SignInRefusal.locked` when giving it back locked the username (`release`).
    func finishReserved(username: String, check: LockoutPolicy.Check) async throws -> SignInOutcome {
        do {
            return try await store.finishSignIn(
                username: username,
                check: check,
                policy: config.lockout,
                now: clock.now()
            )
        } catch {
            if (try? await release(username: username)) == true { throw SignInRefusal.locked }
            throw error
        }
    }
    /// Gives back a reservation whose check never ran. True when that locked the username: expired
    /// reservations are counted first, and one short of the lock they set it. The store then ended the
    /// account's sessions; the caller answers as for any attempt the lock refuses (423, audited as
    /// `refused-locked`, the push connections closed), not with the error that stopped the check.
    func release(username: String) async throws -> Bool {
        try await store.releaseSignIn(username: username, policy: config.lockout, now: clock.now())
    }
    /// Every factor of a re-authentication passed: the count resets, unless the account was locked or
    /// delayed meanwhile (by failures elsewhere), which refuses it, audited as any refused attempt is.
    func complete(_ account: AccountRecord, origin: RequestOrigin) async throws {
        let gate = try await store.completeSignIn(username: account.username, policy: config.lockout, now: clock.now())
        try await refuseAudited(gate, account.id, .reauth, origin)
    }
    /// `refuse`, with the refusal audited as `kind`: the push channel is told first (`refuse`), then the
    /// audit row written. A gate that names no refusal (`busy`) is not stored, and refuses: fail closed.
    func refuseAudited(
        _ gate: LockoutPolicy.Gate,
        _ accountID: String,
        _ kind: AuditKind,
        _ origin: RequestOrigin
    ) async throws {
        do {
            try refuse(gate, accountID: accountID)
        } catch {
            let outcome: AuditOutcome? =
                switch gate {
                case .delayed: .refusedDelayed
                case .locked: .refusedLocked
                case .proceed, .busy: nil
                }
            if let outcome { try await audit.record(accountID, kind, outcome, origin) }
            throw error
        }
    }
    /// The error of a completion's gate (`completeSignIn`, `startSession`); nothing for `.proceed`.
    func refuse(_ gate: LockoutPolicy.Gate, accountID: String) throws {
        switch gate {
        case .proceed: return
        case .delayed(let until): throw SignInRefusal.delayed(until: until)
        case .locked:
            lockedOut(accountID)
            throw SignInRefusal.locked
        case .busy: throw SignInRefusal.locked
        }
    }
    /// A lock ends every session of the account: a guesser holding a stolen token must not keep it once
    /// the account locks. The store ends them in the transaction that locks (`LoginGuard.locks`), whichever
    /// step counted the lock's failure (an expired reservation counts on the next step); this closes the
    /// push connections. Told on every refusal of a locked account, as a refusal cannot tell whether its
    /// own step locked it.
    func lockedOut(_ accountID: String) {
        sessions.ended(.account(accountID))
    }
    /// A sign-in's session and its audit row (`outcome`), stored in one transaction with the lockout reset
    /// (none when `passwordless`: no password was checked) by `SignInStore.startSession`. Throws the
    /// gate's refusal, or `superseded` when the account's password is no longer the one in `account`.
    func storeSession(
        _ account: AccountRecord,
        origin: RequestOrigin,
        now: Date,
        outcome: AuditOutcome,
        superseded: any Error,
        passwordless: Bool = false,
        passkeyID: String? = nil,
        claim: SessionClaim? = nil
    ) async throws -> NewSession {
        let (token, record) = sessions.newAccountSession(
            accountID: account.id,
            origin: origin,
            now: now,
            passwordless: passwordless,
            passkeyID: passkeyID,
            methods: SessionMethods.of(outcome, passwordless: passwordless, passkey: passkeyID != nil)
        )
        switch try await store.startSession(
            record,
            username: account.username,
            passwordHash: account.passwordHash,
            policy: config.lockout,
            now: clock.now(),
            audit: audit.entry(account.id, .signIn, outcome, origin),
            resetsCount: !passwordless,
            claim: claim
        ) {
        case .started:
            return NewSession(token: token, expiresAt: record.expiresAt, account: account)
        case .claimLost:
            throw SessionClaimLost()
        case .refused(let gate):
            // A lock or delay that landed after the check (by failures elsewhere).
            try await refuseAudited(gate, account.id, .signIn, origin)
            throw SignInRefusal.locked  // a refusal that names no refusal: not stored, fail closed
        case .superseded:
            try? await audit.record(account.id, .signIn, .refusedSuperseded, origin)  // best effort, as above
            throw superseded
        }
    }
    /// What one password check under the lockout rule came to.
    enum CheckResult {
        case matched
        case failed(LockoutPolicy.Failure)
        /// Refused by the lockout state, before the check or (set meanwhile) after it; `outcome` is the
        /// audit word for it, nil when the refusal is not an attempt (`busy`).
        case refused(SignInRefusal, outcome: AuditOutcome?)
    }
    /// The one path every password check takes: reserve the check in the username's lockout row, verify
    /// off the event loops, apply the outcome. A full hashing queue releases the reservation and throws
    /// `serverBusy` without counting anything, unless giving it back locked the username (expired
    /// reservations counted first): then it is refused as locked.
    /// `accountID`: the username's account, nil when it has none (the check then runs against a dummy hash
    /// and fails).
    func checkUnderLockout(
        username: String,
        password: String,
        against phc: String,
        accountID: String?
    ) async throws -> CheckResult {
        func refusal(_ gate: LockoutPolicy.Gate) -> CheckResult? {
            switch gate {
            case .proceed: return nil
            case .delayed(let until): return .refused(.delayed(until: until), outcome: .refusedDelayed)
            case .locked: return .refused(.locked, outcome: .refusedLocked)
            case .busy: return .refused(.busy, outcome: nil)
            }
        }
        if let refused = refusal(
            try await store.reserveSignIn(username: username, policy: config.lockout, now: clock.now())
        ) {
            return refused
        }
        let matches: Bool
        do {
            matches = try await verifies(password, phc)
        } catch {
            // Not checked (a full hash queue, or the request was cancelled waiting for a thread): not a failure.
            if try await release(username: username) { return .refused(.locked, outcome: .refusedLocked) }
            throw error
        }
        // A correct password is one factor: `complete` resets the count once every factor has passed.
        let outcome: SignInOutcome
        do {
            outcome = try await finishReserved(
                username: username,
                check: matches && accountID != nil ? .passedMoreToFollow : .failed
            )
        } catch SignInRefusal.locked {
            return .refused(.locked, outcome: .refusedLocked)
        }
        switch outcome {
        case .failed(let failure): return .failed(failure)
        case .succeeded(let gate): return refusal(gate) ?? .matched
        }
    }
    /// Whether `password` verifies against `phc`, off the event loops. A stored hash that does not parse
    /// matches nothing; a full hash queue or a cancelled wait checked nothing, and is thrown.
    func verifies(_ password: String, _ phc: String) async throws -> Bool {
        do {
            return try await hashing.verify(password, phc)
        } catch let error where error is CancellationError || (error as? RequestError) == .serverBusy {
            throw error
        } catch {
            return false
        }
    }
    /// Checks the password against the account, counting failures like sign-in does (a stolen token
    /// must not become an unlimited password oracle).
    func checkPassword(
        _ password: String,
        _ auth: Authenticated,
        origin: RequestOrigin,
        kind: AuditKind
    ) async throws {
        switch try await checkUnderLockout(
            username: auth.account.username,
            password: password,
            against: auth.account.passwordHash,
            accountID: auth.account.id
        ) {
        case .matched:
            return
        case .refused(let error, let outcome):
            if error == .locked { lockedOut(auth.account.id) }
            if let outcome { try await audit.record(auth.account.id, kind, outcome, origin) }
            throw error
        case .failed(let failure):
            switch failure {
            case .counted: try await audit.record(auth.account.id, kind, .wrongPassword, origin)
            case .delayed: try await audit.record(auth.account.id, kind, .wrongPasswordDelayed, origin)
            case .locked:
                lockedOut(auth.account.id)
                try await audit.record(auth.account.id, kind, .wrongPasswordLocked, origin)
            }
            throw SignInError.wrongPassword
        }
    }
    /// Refuses (`SignInRefusal.locked`) while the username is locked, by failed sign-ins, until an
    /// administrator unlocks it. Read after a write that a lock must not miss (a new device session).
    func requireUnlocked(username: String) async throws {
        if try await store.isLocked(username: username) { throw SignInRefusal.locked }
    }
}
