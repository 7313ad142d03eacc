import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import Logging
import Synchronization

/// Who is asking: the client address and user agent, recorded in the audit log.
public struct RequestOrigin: Sendable {
    public var address: String
    public var userAgent: String
    public init(address: String, userAgent: String) {
        self.address = ClientAddress.normalize(address)
        self.userAgent = String(userAgent.prefix(256))
    }
}

/// The record a sign-in was to be collected from moved on before its session was stored (another request
/// collected it): nothing was written. The collecting feature reads the record again and decides; this
/// never reaches a client.
struct SessionClaimLost: Error {}

/// A signed-in request: the session and its account.
public struct Authenticated: Sendable {
    public var session: SessionRecord
    public var account: AccountRecord
}

/// Accounts, sign-in with captcha and lockout, sessions, re-authentication and audit. Decisions take
/// the time from `clock` and randomness from `random`; nothing here knows about HTTP.
public final class AccountService: Sendable {
    let store: any AccountStore
    let audit: AuditLog
    let config: ServerConfiguration
    let clock: any WallClock
    let random: any RandomSource
    let altcha: Altcha
    let logger: Logger
    let signInFailures: AddressThrottle
    let registrations: AddressThrottle
    let recentFailures: RecentFailures
    /// A hash of a random password with the current parameters: unknown usernames are checked against
    /// it so that they cost the same time as real ones.
    let dummyHash: String
    /// Told when sessions end, so that open push connections close at once.
    public let endings = SessionEndings()

    public init(
        store: any AccountStore,
        audit: AuditLog,
        config: ServerConfiguration,
        clock: any WallClock = SystemClock(),
        random: any RandomSource = SystemRandomSource(),
        logger: Logger = Logger(label: "countersign")
    ) async throws {
        self.store = store
        self.audit = audit
        self.config = config
        self.clock = clock
        self.random = random
        self.logger = logger
        let key = try await store.serverSecret(name: "altcha-hmac-key") { random.bytes(32) }
        altcha = Altcha(key: key, maxNumber: config.captchaMaxNumber)
        signInFailures = AddressThrottle(config.signInFailuresPerAddress)
        registrations = AddressThrottle(config.registrationsPerAddress)
        recentFailures = RecentFailures(window: config.riskMemory)
        var rng = RandomSourceGenerator(source: random)
        dummyHash = try config.hasher.hash(random.bytes(16), using: &rng)
    }

    // MARK: Captcha

    public func captchaChallenge() -> Altcha.Challenge {
        var rng = RandomSourceGenerator(source: random)
        return altcha.challenge(now: clock.now(), using: &rng)
    }

    private func checkCaptcha(_ payload: String?, required: Bool) async throws {
        guard required else { return }
        guard let payload, !payload.isEmpty else { throw AccountError.captchaRequired }
        let (challenge, expires): (String, Date)
        do {
            (challenge, expires) = try altcha.verify(payload, now: clock.now())
        } catch let e as Altcha.Failure {
            switch e {
            case .malformed:
                throw AccountError.captchaInvalid(
                    "the captcha solution is not base64 JSON of an ALTCHA SHA-256 solution"
                )
            case .badSignature: throw AccountError.captchaInvalid("the captcha challenge was not issued by this server")
            case .wrongAnswer: throw AccountError.captchaInvalid("the captcha number does not solve the challenge")
            case .expired: throw AccountError.captchaInvalid("the captcha challenge expired")
            }
        }
        guard try await store.spendCaptcha(challenge: challenge, expiresAt: expires) else {
            throw AccountError.captchaInvalid("the captcha solution was already used")
        }
    }

    // MARK: Registration

    public func register(
        username rawUsername: String,
        password: String,
        name rawName: String,
        lastname rawLastname: String,
        captcha: String?,
        origin: RequestOrigin
    ) async throws -> AccountRecord {
        let now = clock.now()
        if let wait = registrations.take(origin.address, now: now) { throw RequestError.rateLimited(retryAfter: wait) }
        let username: String
        let name: String
        let lastname: String
        let hash: String
        do {
            username = try Username(parsing: rawUsername).text
            _ = try NewPassword(parsing: password, username: username)
            name = try PersonName(parsing: rawName, field: "name").text
            lastname = try PersonName(parsing: rawLastname, field: "lastname").text
            try await checkCaptcha(captcha, required: config.captcha != .off)
            hash = try await hashOffPool(password)
        } catch {
            // Refused before any account work (a typo, a captcha, a full queue): not a registration.
            registrations.refund(origin.address, now: now)
            throw error
        }
        let account = AccountRecord(
            id: UUID(uuid: uuidBytes()).uuidString.lowercased(),
            username: username,
            name: name,
            lastname: lastname,
            passwordHash: hash,
            reauthMinutes: 0,
            createdAt: now
        )
        try await store.createAccount(account)
        try await audit.record(account.id, .accountCreated, .success, origin)
        return account
    }

    /// An account made by the operator on the server machine (`admin demo-users`): the same rules for the
    /// username and password as `register`, but no captcha and no per-address limit, which guard the
    /// anonymous route. Audited as `account-created`, with `origin` saying which command made it.
    package func createAccountAsOperator(
        username rawUsername: String,
        password: String,
        name: String,
        lastname: String,
        origin: RequestOrigin
    ) async throws -> AccountRecord {
        let username = try Username(parsing: rawUsername).text
        _ = try NewPassword(parsing: password, username: username)
        let account = AccountRecord(
            id: newID(),
            username: username,
            name: try PersonName(parsing: name, field: "name").text,
            lastname: try PersonName(parsing: lastname, field: "lastname").text,
            passwordHash: try await hashOffPool(password),
            reauthMinutes: 0,
            createdAt: clock.now()
        )
        try await store.createAccount(account)
        try await audit.record(account.id, .accountCreated, .success, origin)
        return account
    }

    /// A random version-4 UUID in lower case, for accounts and devices.
    func newID() -> String { UUID(uuid: uuidBytes()).uuidString.lowercased() }

    private func uuidBytes() -> uuid_t {
        var b = random.bytes(16)
        b[6] = b[6] & 0x0f | 0x40
        b[8] = b[8] & 0x3f | 0x80
        return (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
    }

    // MARK: Sign-in

    public struct NewSession: Sendable {
        public var token: String
        public var expiresAt: Date
        public var account: AccountRecord
    }

    /// A password that matched, and for what: not a success yet. Whoever asked (the sign-in and
    /// re-authentication routes) asks the MFA feature whether a second factor follows, then either
    /// `complete`s it or records it as `pending`. Package-only, like the steps that take it: completing
    /// without asking MFA would skip the second factor, so no code outside this package can.
    package struct VerifiedPassword: Sendable {
        package enum Purpose: Sendable, Equatable {
            case signIn
            /// The session (its token hash) that asked to be re-authenticated.
            case reauthentication(tokenHash: String)
        }
        package let purpose: Purpose
        /// With the stored hash as it is after any rehash: the tag a password change voids (`passwordTag`).
        package let account: AccountRecord
        package let origin: RequestOrigin
        package let at: Date

        var kind: AuditKind { purpose == .signIn ? .signIn : .reauth }
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
        let captchaNeeded = try await captchaRequired(username: username, origin: origin, now: now)
        // One token per attempt, taken before any work; given back only when the sign-in succeeds (or
        // never became an attempt: a missing or bad captcha costs the server nothing).
        if let wait = signInFailures.take(origin.address, now: now) { throw RequestError.rateLimited(retryAfter: wait) }
        var refund = false
        defer { if refund { signInFailures.refund(origin.address, now: clock.now()) } }
        do {
            try await checkCaptcha(captcha, required: captchaNeeded)
        } catch {
            refund = true
            throw error
        }
        guard !username.isEmpty else {
            // No account can have this name: the same work and answer as a wrong password.
            _ = try? await verifyOffPool(password, dummyHash)
            recentFailures.record(address: origin.address, username: nil, now: clock.now())
            throw AccountError.invalidCredentials(delayedUntil: nil, locked: false)
        }
        let account = try await store.account(username: username)
        let auditID = account?.id ?? AuditEvent.unknownAccountID
        let verifiedHash = account?.passwordHash ?? dummyHash
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
            throw AccountError.invalidCredentials(delayedUntil: nil, locked: true)
        case .failed(.delayed(let until)):
            try await audit.record(auditID, .signIn, .wrongPasswordDelayed, origin)
            throw AccountError.invalidCredentials(delayedUntil: until, locked: false)
        case .failed(.counted):
            try await audit.record(auditID, .signIn, .wrongPassword, origin)
            throw AccountError.invalidCredentials(delayedUntil: nil, locked: false)
        case .matched:
            break
        }
        let after = clock.now()
        guard let account else { throw AccountError.invalidCredentials(delayedUntil: nil, locked: false) }
        var currentHash = verifiedHash
        if config.hasher.needsRehash(verifiedHash) {
            let rehashed = try await hashOffPool(password)
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
            superseded: AccountError.invalidCredentials(delayedUntil: nil, locked: false)
        )
        signInFailures.refund(verified.origin.address, now: clock.now())
        return session
    }

    /// A verified re-authentication that needs no second factor marks its session as freshly
    /// authenticated; the lockout count is reset and this address's token given back.
    package func completeReauthentication(_ verified: VerifiedPassword) async throws {
        guard case .reauthentication(let tokenHash) = verified.purpose else {
            preconditionFailure("a sign-in is completed by completeSignIn")
        }
        try await complete(verified.account, origin: verified.origin)
        signInFailures.refund(verified.origin.address, now: clock.now())
        try await store.markReauthenticated(tokenHash: tokenHash, at: clock.now())
        try await audit.record(verified.account.id, .reauth, .success, verified.origin)
    }

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
            superseded: MFAError.signInSuperseded,
            passwordless: passwordless,
            passkeyID: passkeyID,
            claim: claim
        )
        if !passwordless { signInFailures.refund(origin.address, now: clock.now()) }
        return session
    }

    /// Names the password hash a sign-in began with, without keeping the hash itself in the transaction.
    static func passwordTag(_ hash: String) -> String {
        Hex.encode(SHA256.hash(data: Array(("countersign password tag\0" + hash).utf8)).prefix(16))
    }

    /// Refuses, audited as `kind` (`refused-superseded`), a sign-in or re-authentication begun with a
    /// password the account no longer has (`tag`; nil when none was given).
    private func requireSamePassword(
        _ account: AccountRecord,
        _ tag: String?,
        _ kind: AuditKind,
        _ origin: RequestOrigin
    ) async throws {
        guard let tag, Self.passwordTag(account.passwordHash) != tag else { return }
        // Best effort: a failed audit write must not turn the refusal into a server error.
        try? await audit.record(account.id, kind, .refusedSuperseded, origin)
        throw MFAError.signInSuperseded
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

    /// Stores a reserved check's outcome. When the database cannot take it (busy under load: the caller
    /// answers 503 and learns nothing of the check), the reservation is given back, as for a check that
    /// never ran: left pending it would hold later attempts as in flight until it expired. Throws
    /// `SignInRefusal.locked` when giving it back locked the username (`release`).
    private func finishReserved(username: String, check: LockoutPolicy.Check) async throws -> SignInOutcome {
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
    private func release(username: String) async throws -> Bool {
        try await store.releaseSignIn(username: username, policy: config.lockout, now: clock.now())
    }

    /// Every factor of a re-authentication passed: the count resets, unless the account was locked or
    /// delayed meanwhile (by failures elsewhere), which refuses it, audited as any refused attempt is.
    private func complete(_ account: AccountRecord, origin: RequestOrigin) async throws {
        let gate = try await store.completeSignIn(username: account.username, policy: config.lockout, now: clock.now())
        try await refuseAudited(gate, account.id, .reauth, origin)
    }

    /// `refuse`, with the refusal audited as `kind`: the push channel is told first (`refuse`), then the
    /// audit row written. A gate that names no refusal (`busy`) is not stored, and refuses: fail closed.
    private func refuseAudited(
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
    private func refuse(_ gate: LockoutPolicy.Gate, accountID: String) throws {
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
    private func lockedOut(_ accountID: String) {
        endings.ended(.account(accountID))
    }

    /// A sign-in's session and its audit row (`outcome`), stored in one transaction with the lockout reset
    /// (none when `passwordless`: no password was checked) by `AccountStore.startSession`. Throws the
    /// gate's refusal, or `superseded` when the account's password is no longer the one in `account`.
    private func storeSession(
        _ account: AccountRecord,
        origin: RequestOrigin,
        now: Date,
        outcome: AuditOutcome,
        superseded: any Error,
        passwordless: Bool = false,
        passkeyID: String? = nil,
        claim: SessionClaim? = nil
    ) async throws -> NewSession {
        let (session, record) = newSession(
            account,
            origin: origin,
            now: now,
            passwordless: passwordless,
            passkeyID: passkeyID
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
            return session
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

    /// A new session's token (for the client) and record (for the store).
    private func newSession(
        _ account: AccountRecord,
        origin: RequestOrigin,
        now: Date,
        passwordless: Bool = false,
        passkeyID: String? = nil
    ) -> (NewSession, SessionRecord) {
        let token = "cs_" + Base64URL(random.bytes(32)).text
        let expires = now.addingTimeInterval(config.sessionLifetime)
        let record = SessionRecord(
            tokenHash: Self.tokenHash(token),
            accountID: account.id,
            createdAt: now,
            lastUsedAt: now,
            authenticatedAt: passwordless ? Self.neverAuthenticated : now,
            expiresAt: expires,
            address: origin.address,
            userAgent: origin.userAgent,
            passkeyID: passkeyID
        )
        return (NewSession(token: token, expiresAt: expires, account: account), record)
    }

    /// Tokens carry 256 random bits, so a fast hash suffices: a leaked table gives no usable token.
    static func tokenHash(_ token: String) -> String { Hex.encode(SHA256.hash(data: Array(token.utf8))) }

    // MARK: Sessions

    public func authenticate(token: String?) async throws -> Authenticated {
        guard let token, token.hasPrefix("cs_"), token.utf8.count <= 64 else { throw RequestError.unauthenticated }
        let hash = Self.tokenHash(token)
        let now = clock.now()
        guard let session = try await store.session(tokenHash: hash) else { throw RequestError.unauthenticated }
        guard session.expiresAt > now, now.timeIntervalSince(session.lastUsedAt) < config.sessionIdle else {
            try await store.deleteSession(tokenHash: hash)
            throw RequestError.unauthenticated
        }
        guard let account = try await store.account(id: session.accountID) else { throw RequestError.unauthenticated }
        // One write a minute per session at most: idle expiry does not need more precision.
        if now.timeIntervalSince(session.lastUsedAt) >= 60 { try await store.touchSession(tokenHash: hash, at: now) }
        return Authenticated(session: session, account: account)
    }

    /// Ends every session of the account, this one and every device session included.
    public func signOutEverywhere(_ auth: Authenticated, origin: RequestOrigin) async throws {
        try await store.deleteSessions(accountID: auth.account.id, keeping: nil)
        endings.ended(.account(auth.account.id))
        try await audit.record(auth.account.id, .signOutEverywhere, .success, origin)
    }

    public func signOut(_ auth: Authenticated, origin: RequestOrigin) async throws {
        try await store.deleteSession(tokenHash: auth.session.tokenHash)
        try await audit.record(auth.account.id, .signOut, .success, origin)
    }

    /// Sensitive operations need a password check within the account's interval (0 = never asked again).
    /// The longest a change to the second factors (pairing, authenticator app, recovery codes, turning
    /// them off, unpairing) may follow the last full authentication, whatever the account's own interval
    /// (0, "never", included): a stolen session must not be enough to remove or replace them.
    static let secondFactorChangeMinutes = 10
    /// The `authenticatedAt` of a passwordless session.
    static let neverAuthenticated = Date(timeIntervalSince1970: 0)

    func requireRecentAuthentication(_ auth: Authenticated, secondFactorChange: Bool = false) throws {
        var minutes = auth.account.reauthMinutes
        if secondFactorChange {
            minutes = minutes == 0 ? Self.secondFactorChangeMinutes : min(minutes, Self.secondFactorChangeMinutes)
        }
        // A passwordless (QR) session never had a full authentication: whatever the interval, "never"
        // included, it registers no device and changes nothing sensitive until it re-authenticates.
        if auth.session.authenticatedAt == Self.neverAuthenticated {
            throw AccountError.reauthenticationRequired(
                intervalMinutes: minutes == 0 ? Self.secondFactorChangeMinutes : minutes
            )
        }
        guard minutes > 0 else { return }
        if clock.now().timeIntervalSince(auth.session.authenticatedAt) > TimeInterval(minutes * 60) {
            throw AccountError.reauthenticationRequired(intervalMinutes: minutes)
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
    private func verifies(_ password: String, _ phc: String) async throws -> Bool {
        do {
            return try await verifyOffPool(password, phc)
        } catch let error where error is CancellationError || (error as? RequestError) == .serverBusy {
            throw error
        } catch {
            return false
        }
    }

    /// Checks the password against the account, counting failures like sign-in does (a stolen token
    /// must not become an unlimited password oracle).
    private func checkPassword(
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
            throw AccountError.wrongPassword
        }
    }

    /// The captcha policy for a password check of `username` (empty: no valid name) from `origin`: `risk`
    /// asks after a failure for that username or from that address. Sign-in and re-authentication share it.
    private func captchaRequired(username: String, origin: RequestOrigin, now: Date) async throws -> Bool {
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
        let captchaNeeded = try await captchaRequired(username: auth.account.username, origin: origin, now: now)
        if let wait = signInFailures.take(origin.address, now: now) { throw RequestError.rateLimited(retryAfter: wait) }
        var refund = false
        defer { if refund { signInFailures.refund(origin.address, now: clock.now()) } }
        do {
            try await checkCaptcha(captcha, required: captchaNeeded)
        } catch {
            refund = true
            throw error
        }
        do {
            try await checkPassword(password, auth, origin: origin, kind: .reauth)
        } catch RequestError.serverBusy {
            refund = true
            throw RequestError.serverBusy
        } catch AccountError.wrongPassword {
            recentFailures.record(address: origin.address, username: auth.account.username, now: clock.now())
            throw AccountError.wrongPassword
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
        // The same checks as `authenticate`: an expired or idle session is not brought back.
        guard let session = try await store.session(tokenHash: tokenHash), session.accountID == accountID,
            session.expiresAt > now,
            now.timeIntervalSince(session.lastUsedAt) < config.sessionIdle
        else {
            throw RequestError.unauthenticated
        }
        guard let account = try await store.account(id: accountID) else { throw RequestError.unauthenticated }
        try await requireSamePassword(account, passwordTag, .reauth, origin)
        try await complete(account, origin: origin)
        signInFailures.refund(origin.address, now: now)
        try await store.markReauthenticated(tokenHash: tokenHash, at: now)
        try await audit.record(accountID, .reauth, .succeeded(via: method), origin)
    }

    public func changePassword(_ auth: Authenticated, current: String, new: String, origin: RequestOrigin) async throws
    {
        try requireRecentAuthentication(auth)
        _ = try NewPassword(parsing: new, username: auth.account.username)
        // Not a sign-in: a password change resets no count (with the interval "never" it needs no recent
        // second factor, and would otherwise wipe a guesser's wrong codes).
        try await checkPassword(current, auth, origin: origin, kind: .passwordChange)
        try await store.changePassword(
            try await hashOffPool(new),
            accountID: auth.account.id,
            keepingSession: auth.session.tokenHash
        )
        endings.ended(.account(auth.account.id))
        try await audit.record(auth.account.id, .passwordChange, .success, origin)
    }

    public static let reauthChoices = AccountSettings.reauthChoices

    public func updateSettings(_ auth: Authenticated, reauthMinutes: Int, origin: RequestOrigin) async throws {
        guard Self.reauthChoices.contains(reauthMinutes) else {
            throw RequestError.invalidField(field: "reauthIntervalMinutes", reason: "one of 0 (never), 5, 10, 30, 60")
        }
        try requireRecentAuthentication(auth)
        try await store.setReauthMinutes(reauthMinutes, accountID: auth.account.id)
        try await audit.record(auth.account.id, .settingsChange, .success, origin)
    }

    public func auditEvents(_ auth: Authenticated, before: Int64?, limit: Int) async throws -> [AuditEvent] {
        try await audit.events(accountID: auth.account.id, before: before, limit: limit)
    }

    // MARK: Helpers

    /// The account with this ID, for the features built on accounts (nil: none).
    func account(id: String) async throws -> AccountRecord? { try await store.account(id: id) }

    /// The account with this (canonical) username (nil: none).
    func account(username: String) async throws -> AccountRecord? { try await store.account(username: username) }

    /// Whether the username is locked (by failed sign-ins, until an administrator unlocks it).
    func isLocked(username: String) async throws -> Bool { try await store.isLocked(username: username) }

    /// Argon2id takes ~15 ms of CPU and 19 MiB: it runs on threads of its own (`HashThreads`),
    /// and past `maxQueuedHashes` waiting checks the server answers 503 at once instead of letting the
    /// queue (and every reservation's age) grow.
    private let queued = Mutex(0)

    private func onHashQueue<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        let admitted = queued.withLock { n -> Bool in
            guard n < config.maxQueuedHashes else { return false }
            n += 1
            return true
        }
        guard admitted else { throw RequestError.serverBusy }
        defer { queued.withLock { $0 -= 1 } }
        return try await HashThreads.run(work)
    }

    private func hashOffPool(_ password: String) async throws -> String {
        let hasher = config.hasher
        let random = self.random
        return try await onHashQueue {
            var rng = RandomSourceGenerator(source: random)
            return try hasher.hash(Array(password.utf8), using: &rng)
        }
    }

    private func verifyOffPool(_ password: String, _ phc: String) async throws -> Bool {
        try await onHashQueue { try PasswordHasher.verify(Array(password.utf8), against: phc) }
    }
}
