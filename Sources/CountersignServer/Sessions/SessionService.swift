import CountersignAPI
import CountersignCrypto
import Foundation

/// Account sessions (`cs_…`, given by a sign-in) and device sessions (`csd_…`, opened by a device's
/// signature): their tokens, their lookup on every request, their idle and absolute lifetimes, the
/// re-authentication interval, and their endings. Every ending goes through `ended`, which tells whoever
/// was given at construction (the push channel's connections on every node) the moment the database
/// says so. Clock and randomness are injected; nothing here knows about HTTP.
public final class SessionService: Sendable {
    let store: any SessionStore
    let config: ServerConfiguration
    let clock: any WallClock
    let random: any RandomSource
    private let tell: @Sendable (SessionEnding) -> Void
    private let signingOut: @Sendable (SignedOutBrowser) async -> Void

    /// A browser's account session that signed out (Home's "Sign out"): what else it started ends with it
    /// (the OpenID Connect provider's grants made in it, docs/PROTOCOL.md §6.8).
    public struct SignedOutBrowser: Sendable {
        public var accountID: String
        /// The session's own name for the provider (`OIDCService.sessionID` before it was bound).
        public var sessionName: String
        public var bindingID: String?
    }

    /// `signingOut`: awaited before an account session that signs out is ended, while the sessions of its
    /// binding (the browser's other tabs) still name what they started.
    public init(
        store: any SessionStore,
        config: ServerConfiguration,
        clock: any WallClock,
        random: any RandomSource,
        signingOut: @escaping @Sendable (SignedOutBrowser) async -> Void = { _ in },
        ended: @escaping @Sendable (SessionEnding) -> Void
    ) {
        self.store = store
        self.config = config
        self.clock = clock
        self.random = random
        self.signingOut = signingOut
        self.tell = ended
    }

    /// Sessions ended in the database (by this service, or in another feature's transaction: a lock, a
    /// password change, a revocation): tells the one given at construction.
    func ended(_ ending: SessionEnding) { tell(ending) }

    // MARK: Account sessions

    /// A new account session's token (for the client) and record (for the store, which starts it in
    /// one transaction with the sign-in's lockout reset: `SignInStore.startSession`).
    /// `passwordless`: a QR sign-in (the authenticator alone) has never had a full authentication.
    func newAccountSession(
        accountID: String,
        origin: RequestOrigin,
        now: Date,
        passwordless: Bool = false,
        passkeyID: String? = nil,
        methods: [String] = SessionMethods.passwordOnly
    ) -> (token: String, record: SessionRecord) {
        let token = "cs_" + Base64URL(random.bytes(32)).text
        let record = SessionRecord(
            tokenHash: TokenHash.hex(token),
            accountID: accountID,
            createdAt: now,
            lastUsedAt: now,
            authenticatedAt: passwordless ? Self.neverAuthenticated : now,
            expiresAt: now.addingTimeInterval(config.sessionLifetime),
            address: origin.address,
            userAgent: origin.userAgent,
            passkeyID: passkeyID,
            methods: methods
        )
        return (token, record)
    }

    /// A session resumed from a binding (docs/PROTOCOL.md §1.1): its last full authentication and passkey
    /// are the binding's, so the re-authentication interval counts from the password, not the reload.
    func resumedSession(
        binding: SessionBindingRecord,
        origin: RequestOrigin,
        now: Date
    ) -> (token: String, record: SessionRecord) {
        var (token, record) = newAccountSession(
            accountID: binding.accountID,
            origin: origin,
            now: now,
            passkeyID: binding.passkeyID,
            methods: binding.methods
        )
        record.authenticatedAt = binding.authenticatedAt
        record.bindingID = binding.id
        return (token, record)
    }

    /// The account session of a bearer token; an expired or idle one is deleted.
    public func authenticate(token: String?) async throws -> Authenticated {
        guard let token, token.hasPrefix("cs_"), token.utf8.count <= 64 else { throw SessionError.noAccountSession }
        let hash = TokenHash.hex(token)
        let now = clock.now()
        guard let session = try await store.session(tokenHash: hash) else { throw SessionError.noAccountSession }
        guard isLive(session, now: now) else {
            try await store.deleteSession(tokenHash: hash)
            throw SessionError.noAccountSession
        }
        guard let account = try await store.account(id: session.accountID) else { throw SessionError.noAccountSession }
        // One write a minute per session at most: idle expiry does not need more precision.
        if now.timeIntervalSince(session.lastUsedAt) >= 60 { try await store.touchSession(tokenHash: hash, at: now) }
        return Authenticated(session: session, account: account)
    }

    /// The session `tokenHash` of `accountID` as a re-authentication finishes: the same checks as
    /// `authenticate`, so an expired or idle session is not brought back.
    @discardableResult
    func liveSession(tokenHash: String, accountID: String) async throws -> SessionRecord {
        guard let session = try await store.session(tokenHash: tokenHash), session.accountID == accountID,
            isLive(session, now: clock.now())
        else { throw SessionError.noAccountSession }
        return session
    }

    private func isLive(_ session: SessionRecord, now: Date) -> Bool {
        session.expiresAt > now && now.timeIntervalSince(session.lastUsedAt) < config.sessionIdle
    }

    /// A full authentication (password and second factor) just completed on this session.
    /// The session counts as freshly authenticated, by `methods` (RFC 8176): a re-authentication says how the
    /// session was last proven, stronger or weaker than its sign-in.
    func markReauthenticated(tokenHash: String, at now: Date, methods: [String]) async throws {
        try await store.markReauthenticated(tokenHash: tokenHash, at: now, methods: methods)
    }

    /// Ends every session of the account, this one and every device session included.
    func endAll(accountID: String) async throws {
        try await store.deleteSessions(accountID: accountID, keeping: nil)
        ended(.account(accountID))
    }

    /// Ends the session; a browser's bound one ends with its binding and every tab's session from it.
    func signOut(_ auth: Authenticated) async throws {
        await signingOut(
            SignedOutBrowser(
                accountID: auth.account.id,
                sessionName: "s_" + String(auth.session.tokenHash.prefix(24)),
                bindingID: auth.session.bindingID
            )
        )
        try await store.endSession(tokenHash: auth.session.tokenHash)
    }

    /// The longest a change to the second factors (pairing, authenticator app, recovery codes, turning
    /// them off, unpairing) may follow the last full authentication, whatever the account's own interval
    /// (0, "never", included): a stolen session must not be enough to remove or replace them.
    static let secondFactorChangeMinutes = 10
    /// The `authenticatedAt` of a passwordless session.
    static let neverAuthenticated = Date(timeIntervalSince1970: 0)

    /// Sensitive operations need a full authentication within the account's interval (0 = never asked
    /// again); changes to the second factors within `secondFactorChangeMinutes` whatever the interval.
    func requireRecentAuthentication(_ auth: Authenticated, secondFactorChange: Bool = false) throws {
        let minutes = Self.recentMinutes(auth, secondFactorChange: secondFactorChange)
        // A passwordless (QR) session never had a full authentication: whatever the interval, "never"
        // included, it registers no device and changes nothing sensitive until it re-authenticates.
        if auth.session.authenticatedAt == Self.neverAuthenticated {
            throw SessionError.reauthenticationRequired(
                intervalMinutes: minutes == 0 ? Self.secondFactorChangeMinutes : minutes
            )
        }
        guard minutes > 0 else { return }
        if clock.now().timeIntervalSince(auth.session.authenticatedAt) > TimeInterval(minutes * 60) {
            throw SessionError.reauthenticationRequired(intervalMinutes: minutes)
        }
    }

    /// How recent a full authentication `requireRecentAuthentication` asks for (0: any).
    static func recentMinutes(_ auth: Authenticated, secondFactorChange: Bool) -> Int {
        let minutes = auth.account.reauthMinutes
        guard secondFactorChange else { return minutes }
        return minutes == 0 ? secondFactorChangeMinutes : min(minutes, secondFactorChangeMinutes)
    }

    /// Whether `requireRecentAuthentication` would let `auth` through at `now`.
    static func isRecentlyAuthenticated(_ auth: Authenticated, secondFactorChange: Bool, now: Date) -> Bool {
        guard auth.session.authenticatedAt != neverAuthenticated else { return false }
        let minutes = recentMinutes(auth, secondFactorChange: secondFactorChange)
        return minutes == 0 || now.timeIntervalSince(auth.session.authenticatedAt) <= TimeInterval(minutes * 60)
    }

    // MARK: Device sessions

    /// A new device session's token, not yet stored.
    func newDeviceSessionToken() -> String { "csd_" + Base64URL(random.bytes(32)).text }

    /// The record of the session `token` opens for `device`, from `now`.
    func deviceSessionRecord(token: String, device: DeviceRecord, at now: Date) -> DeviceSessionRecord {
        DeviceSessionRecord(
            tokenHash: TokenHash.hex(token),
            deviceID: device.id,
            accountID: device.accountID,
            createdAt: now,
            lastUsedAt: now,
            expiresAt: now.addingTimeInterval(config.deviceSessionLifetime)
        )
    }

    func storeDeviceSession(_ session: DeviceSessionRecord) async throws {
        try await store.createDeviceSession(session)
    }

    /// Takes back a device session just stored that a concurrent revocation, rotation or lock must end.
    func dropDeviceSession(_ session: DeviceSessionRecord) async throws {
        try await store.deleteDeviceSession(tokenHash: session.tokenHash)
    }

    public func authenticate(deviceToken token: String?) async throws -> DeviceAuthenticated {
        guard let token, token.hasPrefix("csd_"), token.utf8.count <= 64 else { throw SessionError.noDeviceSession }
        return try await authenticate(deviceSessionHash: TokenHash.hex(token))
    }

    /// The device session stored under `hash` (a push ticket carries it), if it is still valid: one of an
    /// active device, within its lifetimes. An expired one is deleted and its ending told; a used one is
    /// touched (with its device) once a minute.
    func authenticate(deviceSessionHash hash: String) async throws -> DeviceAuthenticated {
        let now = clock.now()
        guard let (session, device, account) = try await store.deviceSessionContext(tokenHash: hash) else {
            throw SessionError.noDeviceSession
        }
        guard session.expiresAt > now, now.timeIntervalSince(session.lastUsedAt) < config.deviceSessionIdle else {
            try await store.deleteDeviceSession(tokenHash: hash)
            ended(.deviceSession(tokenHash: hash))
            throw SessionError.noDeviceSession
        }
        guard device.isActive else { throw SessionError.noDeviceSession }
        if now.timeIntervalSince(session.lastUsedAt) >= 60 {
            try await store.touchDeviceSession(tokenHash: hash, at: now)
            try await store.touchDevice(id: device.id, at: now)
        }
        return DeviceAuthenticated(session: session, device: device, account: account)
    }

    /// Ends a device session (its own sign-out).
    func signOut(_ auth: DeviceAuthenticated) async throws {
        try await store.deleteDeviceSession(tokenHash: auth.session.tokenHash)
        ended(.deviceSession(tokenHash: auth.session.tokenHash))
    }

    /// New keys end every other session of the device: whoever held one (a thief of the old key, say)
    /// must prove possession of the new key to come back. The rotating session stays. One signal
    /// whatever the number of sessions.
    func endOtherSessions(of auth: DeviceAuthenticated) async throws {
        try await store.deleteDeviceSessions(deviceID: auth.device.id, keeping: auth.session.tokenHash)
        ended(.otherDeviceSessions(deviceID: auth.device.id, keeping: auth.session.tokenHash))
    }
}
