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

/// Accounts: registration, the operator's accounts, password change, settings, sign-out, and the audit
/// log's reading. Sign-in is `SignInService`'s; sessions are `SessionService`'s. Decisions take the time
/// from `clock` and randomness from `random`; nothing here knows about HTTP.
public final class AccountService: Sendable {
    let store: any AccountStore
    let sessions: SessionService
    let signIn: SignInService
    let audit: AuditLog
    let config: ServerConfiguration
    let clock: any WallClock
    let random: any RandomSource
    let captcha: CaptchaGate
    let hashing: PasswordHashing
    let logger: Logger
    let registrations: AddressThrottle

    init(
        store: any AccountStore,
        sessions: SessionService,
        signIn: SignInService,
        audit: AuditLog,
        config: ServerConfiguration,
        clock: any WallClock,
        random: any RandomSource,
        captcha: CaptchaGate,
        hashing: PasswordHashing,
        logger: Logger
    ) {
        self.store = store
        self.sessions = sessions
        self.signIn = signIn
        self.audit = audit
        self.config = config
        self.clock = clock
        self.random = random
        self.captcha = captcha
        self.hashing = hashing
        self.logger = logger
        registrations = AddressThrottle(config.registrationsPerAddress)
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
            try await self.captcha.check(captcha, required: config.captcha != .off)
            hash = try await hashing.hash(password)
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
            passwordHash: try await hashing.hash(password),
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

    // MARK: Sessions

    /// Ends every session of the account, this one and every device session included.
    public func signOutEverywhere(_ auth: Authenticated, origin: RequestOrigin) async throws {
        try await sessions.endAll(accountID: auth.account.id)
        try await audit.record(auth.account.id, .signOutEverywhere, .success, origin)
    }

    public func signOut(_ auth: Authenticated, origin: RequestOrigin) async throws {
        try await sessions.signOut(auth)
        try await audit.record(auth.account.id, .signOut, .success, origin)
    }

    public func changePassword(_ auth: Authenticated, current: String, new: String, origin: RequestOrigin) async throws
    {
        try sessions.requireRecentAuthentication(auth)
        _ = try NewPassword(parsing: new, username: auth.account.username)
        // Not a sign-in: a password change resets no count (with the interval "never" it needs no recent
        // second factor, and would otherwise wipe a guesser's wrong codes).
        try await signIn.checkPassword(current, auth, origin: origin, kind: .passwordChange)
        try await store.changePassword(
            try await hashing.hash(new),
            accountID: auth.account.id,
            keepingSession: auth.session.tokenHash
        )
        sessions.ended(.account(auth.account.id))
        try await audit.record(auth.account.id, .passwordChange, .success, origin)
    }

    public static let reauthChoices = AccountSettings.reauthChoices

    /// `GET /v1/captcha`: a challenge for registration or a password check.
    public func captchaChallenge() -> Altcha.Challenge { captcha.challenge() }

    public func updateSettings(_ auth: Authenticated, reauthMinutes: Int, origin: RequestOrigin) async throws {
        guard Self.reauthChoices.contains(reauthMinutes) else {
            throw RequestError.invalidField(field: "reauthIntervalMinutes", reason: "one of 0 (never), 5, 10, 30, 60")
        }
        try sessions.requireRecentAuthentication(auth)
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
}
