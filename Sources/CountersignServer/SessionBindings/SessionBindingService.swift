import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation

/// Staying signed in in a browser (docs/PROTOCOL.md §1.1): a browser binds a key it holds to its account
/// session right after signing in, and after a reload, in a new tab or after a restart resumes the session
/// by signing the server's nonce with that key. No token is kept by the browser; the binding lasts while it
/// is used within its idle limit, and every ending of the account's sessions ends it. Clock and randomness
/// are injected.
/// A struct with the memberwise initialiser: `ServerServices.assemble` gives it its parts.
struct SessionBindingService: Sendable {
    let store: any SessionBindingStore
    let sessions: SessionService
    let signIn: SignInService
    let audit: AuditLog
    let config: ServerConfiguration
    let clock: any WallClock
    let random: any RandomSource
    /// Resumption nonces per client address (the device-session nonces' limit).
    let nonces: AddressThrottle

    static let resumeKind = "resume"
    /// A session may be bound this long after it started or last fully authenticated, and not later: a
    /// stolen session token must not turn itself into a month-long credential.
    static let bindWithin: TimeInterval = 10 * 60
    /// Sessions one binding keeps at once (one per tab; the least recently used beyond end).
    static let sessionsPerBinding = 16
    /// Bindings one account keeps (one per browser; the least recently used beyond end).
    static let bindingsPerAccount = 20
    /// A binding's next nonce (given with a binding and with each resumption, so a reload signs and resumes
    /// in one request): one per binding at a time, each new one replacing the last, valid this long at most.
    /// A signature over it that leaked from the page is good once, until the binding's next resumption or
    /// this, whichever comes first. Past it a reload asks for a fresh nonce first.
    static let nextKind = "resume-next"
    static let nextNonceLifetime: TimeInterval = 3600

    func idle(_ binding: SessionBindingRecord) -> TimeInterval {
        binding.deviceID == nil ? config.bindingIdleWithoutDevice : config.bindingIdle
    }

    // MARK: Binding

    /// Binds the key of `request` to the session `auth`. A session binds once, soon after it started or
    /// fully authenticated; a bound one may move its binding to its device's signing key, proven by it.
    func bind(
        _ auth: Authenticated,
        _ request: SessionBindingRequest,
        origin: RequestOrigin
    ) async throws -> (SessionBindingRecord, TimeInterval, next: DeviceChallenge?) {
        guard config.bindingIdle > 0 else { throw SessionBindingError.off }
        guard let key = try? PublicKey(spki: request.publicKey.bytes) else {
            throw RequestError.invalidField(field: "publicKey", reason: "a P-256 public key as SPKI DER (SPEC §2.3)")
        }
        guard
            key.isValidSignature(
                request.signature.bytes,
                for: DeviceProof.bindingMessage(accountID: auth.account.id, key: key)
            )
        else { throw SessionBindingError.badSignature }
        let now = clock.now()
        let session = auth.session
        var existing: SessionBindingRecord?
        if let id = session.bindingID { existing = try await store.binding(id: id) }
        if let deviceID = request.deviceId {
            guard let device = try await store.device(id: deviceID), device.accountID == auth.account.id,
                device.isActive, device.kind == DeviceRecord.messaging, device.signingKey == key.spkiDER
            else { throw SessionBindingError.notThisDevice }
        }
        // Only a fresh session binds or moves its binding, never one stolen and kept: one that signed in in
        // the last 10 minutes and was never bound, or one fully authenticated in them. A resumed session is
        // bound from its start, so a reload never makes it fresh (its `createdAt` is the reload's).
        let since = session.bindingID == nil ? max(session.createdAt, session.authenticatedAt) : session.authenticatedAt
        guard now.timeIntervalSince(since) <= Self.bindWithin else { throw SessionBindingError.tooLate }
        // A resumed session carries its binding's last full authentication, made before it started: only one
        // of its own (a re-authentication in it) lets it move the binding, whenever the one it carries was.
        guard session.bindingID == nil || session.authenticatedAt >= session.createdAt else {
            throw SessionBindingError.tooLate
        }
        var binding = SessionBindingRecord(
            id: existing?.id ?? "sb_" + Base64URL(random.bytes(18)).text,
            accountID: auth.account.id,
            publicKey: key.spkiDER,
            deviceID: request.deviceId,
            createdAt: existing?.createdAt ?? now,
            lastUsedAt: now,
            authenticatedAt: max(existing?.authenticatedAt ?? session.authenticatedAt, session.authenticatedAt),
            passkeyID: existing?.passkeyID ?? session.passkeyID,
            methods: session.methods
        )
        guard let id = try await store.bind(binding, sessionTokenHash: session.tokenHash, keep: Self.bindingsPerAccount)
        else { throw RequestError.unauthenticated }  // the session ended meanwhile (401, as the session lookup)
        binding.id = id
        try await audit.record(auth.account.id, .sessionBound, .success, origin)
        return (binding, idle(binding), await nextNonce(binding))
    }

    /// A nonce the binding's next resumption may sign without asking for one (single use, as any other),
    /// replacing the binding's last one. Nil when it could not be stored: the reload then asks for one.
    private func nextNonce(_ binding: SessionBindingRecord) async -> DeviceChallenge? {
        let lifetime = min(idle(binding), Self.nextNonceLifetime)
        let nonce = SingleUseNonce(random: random, now: clock.now(), lifetime: lifetime)
        do {
            try await store.replaceChallenge(
                hash: nonce.hash,
                kind: Self.nextKind,
                subject: binding.id,
                expiresAt: nonce.challenge.expiresAt
            )
        } catch {
            return nil
        }
        return nonce.challenge
    }

    // MARK: Resuming

    func resumptionChallenge(bindingID: String, origin: RequestOrigin) async throws -> DeviceChallenge {
        if let wait = nonces.take(origin.address, now: clock.now()) { throw RequestError.rateLimited(retryAfter: wait) }
        guard bindingID.utf8.count <= 64 else {
            throw RequestError.invalidField(
                field: "bindingId",
                reason: "a binding ID from PUT /v1/sessions/current/binding"
            )
        }
        // Issued for any ID: whether a binding exists is learnt only by proving its key.
        let nonce = SingleUseNonce(random: random, now: clock.now(), lifetime: config.challengeLifetime)
        try await store.createChallenge(
            hash: nonce.hash,
            kind: Self.resumeKind,
            subject: bindingID,
            expiresAt: nonce.challenge.expiresAt
        )
        return nonce.challenge
    }

    /// A new account session from the binding, proven by its key's signature over the nonce.
    /// The new session, and its last full authentication (the binding's; the epoch for a passwordless one).
    func resume(
        _ request: SessionResumptionRequest,
        origin: RequestOrigin
    ) async throws -> (NewSession, authenticatedAt: Date, next: DeviceChallenge?) {
        guard let hash = SingleUseNonce.storedHash(of: request.nonce),
            try await store.spendChallenge(
                hash: hash,
                kinds: [Self.resumeKind, Self.nextKind],
                subject: request.bindingId,
                now: clock.now()
            )
        else { throw SessionBindingError.challengeInvalid }
        guard config.bindingIdle > 0 else { throw SessionBindingError.ended }
        let now = clock.now()
        // One answer for an unknown binding, a wrong key and an ended one: the endpoint is anonymous.
        guard let binding = try await store.binding(id: request.bindingId),
            let key = try await currentKey(of: binding),
            key.isValidSignature(
                request.signature.bytes,
                for: DeviceProof.resumptionMessage(nonce: request.nonce.bytes, bindingID: binding.id)
            )
        else { throw SessionBindingError.ended }
        guard now.timeIntervalSince(binding.lastUsedAt) < idle(binding) else {
            try await store.deleteBinding(id: binding.id)
            throw SessionBindingError.ended
        }
        guard let account = try await store.account(id: binding.accountID) else { throw SessionBindingError.ended }
        try await signIn.requireUnlocked(username: account.username)
        let (token, record) = sessions.resumedSession(binding: binding, origin: origin, now: now)
        guard try await store.resume(record, keep: Self.sessionsPerBinding) else { throw SessionBindingError.ended }
        try await audit.record(account.id, .sessionResumed, .success, origin)
        return (
            NewSession(token: token, expiresAt: record.expiresAt, account: account), record.authenticatedAt,
            await nextNonce(binding)
        )
    }

    /// The key that proves the binding: its device's current signing key (the device rotates it) while
    /// the device is an active one of the account; its own key otherwise. Nil: the device is gone.
    private func currentKey(of binding: SessionBindingRecord) async throws -> PublicKey? {
        guard let deviceID = binding.deviceID else { return try? PublicKey(spki: binding.publicKey) }
        guard let device = try await store.device(id: deviceID), device.accountID == binding.accountID,
            device.isActive
        else {
            try await store.deleteBinding(id: binding.id)
            return nil
        }
        return try? PublicKey(spki: device.signingKey)
    }
}
