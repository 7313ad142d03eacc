import CountersignAPI
import Foundation

/// Assertions (docs/PROTOCOL.md §5.3): a discoverable sign-in, a second factor, a re-authentication. Each
/// answer is checked under the account's lockout rule, as a password is: a refused assertion counts one
/// failure, a locked or delayed account gets nothing, and every outcome is audited.
extension PasskeyService {
    /// An assertion whose ceremony was taken and whose passkey was found, ready to be checked.
    struct Attempt: Sendable {
        let ceremony: PasskeyCeremony
        let response: PasskeyAssertionResponse
        /// Nil when the credential is not one of the account's passkeys (or of any account's, when
        /// discoverable): checking it fails.
        let stored: StoredPasskey?
        let accountID: String?
    }

    // MARK: Starting

    /// Options for a discoverable sign-in: anyone may ask, so asking is limited per address, and nothing
    /// is stored until it is answered (`SignInCeremony`): no number of starts fills anything.
    public func startSignIn(origin: RequestOrigin) async throws -> PasskeyAssertionStart {
        if let wait = starts.take(origin.address, now: clock.now()) { throw RequestError.rateLimited(retryAfter: wait) }
        return options(SignInCeremony.make(key: signInKey, now: clock.now(), random: random), allow: [])
    }

    /// Options for re-authenticating `auth`'s session with one of the account's passkeys.
    public func startReauthentication(_ auth: Authenticated) async throws -> PasskeyAssertionStart {
        try limitStarts(accountID: auth.account.id)
        let passkeys = try await store.passkeys(accountID: auth.account.id)
        guard !passkeys.isEmpty else { throw PasskeyError.noPasskeys }
        return try await start(
            kind: .reauthentication,
            accountID: auth.account.id,
            boundTo: auth.session.tokenHash,
            allow: passkeys
        )
    }

    /// Options for the second factor of the sign-in transaction `transactionID` of `accountID` (the
    /// caller has checked the transaction's binding secret).
    func startSecondFactor(transactionID: String, accountID: String) async throws -> PasskeyAssertionStart {
        try limitStarts(accountID: accountID)
        let passkeys = try await store.passkeys(accountID: accountID)
        guard !passkeys.isEmpty else { throw PasskeyError.noPasskeys }
        return try await start(kind: .secondFactor, accountID: accountID, boundTo: transactionID, allow: passkeys)
    }

    private func start(
        kind: PasskeyCeremony.Kind,
        accountID: String?,
        boundTo: String?,
        allow: [StoredPasskey]
    ) async throws -> PasskeyAssertionStart {
        let now = clock.now()
        let ceremony = PasskeyCeremony.make(
            kind: kind,
            accountID: accountID,
            boundTo: boundTo,
            now: now,
            random: random
        )
        try await store.createCeremony(
            id: ceremony.id,
            state: try JSONEncoder().encode(ceremony),
            expiresAt: ceremony.expiresAt
        )
        return options(ceremony, allow: allow)
    }

    private func options(_ ceremony: PasskeyCeremony, allow: [StoredPasskey]) -> PasskeyAssertionStart {
        PasskeyAssertionStart(
            ceremonyId: ceremony.id,
            publicKey: PasskeyRequestOptions(
                challenge: Base64URL(ceremony.challenge),
                timeoutMs: Self.timeoutMs,
                rpID: rp.id,
                allow: allow.map { .init(id: Base64URL($0.credentialID), transports: $0.transports) }
            )
        )
    }

    // MARK: Finishing

    /// Takes the ceremony (whatever comes next, it is answered once) and finds the passkey. Throws only
    /// when there is nothing to count a failure against: no such ceremony, or not of this kind, session
    /// or transaction.
    func attempt(
        _ finish: PasskeyAssertionFinish,
        kind: PasskeyCeremony.Kind,
        accountID: String?,
        boundTo: String?
    ) async throws -> Attempt {
        try PasskeyRules.refuseSecrets(finish.credential.clientExtensionResults)
        let now = clock.now()
        let ceremony: PasskeyCeremony
        if kind == .signIn {
            // Carried by the client: answered once because answering stores it.
            // Kept past its expiry by another lifetime: a node whose clock runs ahead purges it only after
            // every node's MAC check has stopped admitting the ID.
            guard let carried = SignInCeremony.open(finish.ceremonyId, key: signInKey, now: now),
                try await store.spendCeremony(
                    id: carried.id,
                    expiresAt: carried.expiresAt.addingTimeInterval(PasskeyCeremony.lifetime),
                    now: now
                )
            else { throw PasskeyError.ceremonyNotFound }
            ceremony = carried
        } else {
            guard finish.ceremonyId.utf8.count <= 64, !finish.ceremonyId.hasPrefix(SignInCeremony.prefix),
                let state = try await store.takeCeremony(id: finish.ceremonyId, now: now),
                let stored = try? JSONDecoder().decode(PasskeyCeremony.self, from: state),
                stored.kind == kind, stored.boundTo == boundTo, stored.accountID == accountID
            else { throw PasskeyError.ceremonyNotFound }
            ceremony = stored
        }
        let c = finish.credential
        let found =
            c.rawId.bytes.count <= Self.maxCredentialIDLength
            ? try await store.passkey(credentialID: c.rawId.bytes) : nil
        // A passkey of another account than the one signing in is no passkey of this one.
        let stored = found.flatMap { accountID == nil || $0.accountID == accountID ? $0 : nil }
        return Attempt(ceremony: ceremony, response: c, stored: stored, accountID: accountID ?? stored?.accountID)
    }

    /// Checks the attempt's signature and flags; records the use when they hold. The lockout count is
    /// the caller's (`AccountService.checkSecondFactor` runs this as its check).
    func check(_ a: Attempt) async throws -> Result<StoredPasskey, PasskeyError> {
        let c = a.response
        guard let stored = a.stored else { return .failure(.unknownCredential) }
        guard c.type == "public-key", c.id == c.rawId.text else {
            return .failure(.data(.malformed("the credential's type must be public-key and its id its rawId")))
        }
        let handle = try await store.userHandle(accountID: stored.accountID, candidate: random.bytes(16))
        let now = clock.now()
        let verified: PasskeyRules.Verified
        do {
            verified = try PasskeyRules.verifyAssertion(
                .init(
                    rawID: c.rawId.bytes,
                    clientDataJSON: c.response.clientDataJSON.bytes,
                    authenticatorData: c.response.authenticatorData.bytes,
                    signature: c.response.signature.bytes,
                    userHandle: c.response.userHandle?.bytes
                ),
                ceremony: a.ceremony,
                kind: a.ceremony.kind,
                boundTo: a.ceremony.boundTo,
                stored: stored,
                userHandle: handle,
                rp: rp,
                now: now
            )
        } catch { return .failure(error) }
        guard
            try await store.recordPasskeyUse(
                id: stored.id,
                expectedCount: stored.signCount,
                newCount: verified.signCount,
                backedUp: verified.backedUp,
                at: now
            )
            // The signature held: the owner's own double submit, not a guess. Thrown, so the lockout
            // reservation is given back rather than counted.
        else { throw PasskeyError.concurrentUse }
        return .success(stored)
    }

    /// Runs `check` under the account's lockout rule and audits a refusal under `kind`. Returns the
    /// passkey when the assertion holds; throws the refusal otherwise (the account's lock or delay when
    /// this failure set one).
    func checkCounted(_ a: Attempt, audit kind: AuditKind, origin: RequestOrigin) async throws -> StoredPasskey {
        guard let accountID = a.accountID else {
            try await audit.record(AuditEvent.unknownAccountID, kind, .wrongPasskey, origin)
            throw PasskeyError.unknownCredential
        }
        var outcome: Result<StoredPasskey, PasskeyError> = .failure(.unknownCredential)
        let counted: SignInService.FactorCheck
        do {
            counted = try await signIn.checkSecondFactor(accountID: accountID) {
                outcome = try await self.check(a)
                if case .success = outcome { return true }
                return false
            }
        } catch SignInRefusal.delayed(let until) {
            // Refused by the lock or the delay, before or after the check: audited as password sign-ins are.
            try await audit.record(accountID, kind, .refusedDelayed, origin)
            throw SignInRefusal.delayed(until: until)
        } catch SignInRefusal.locked {
            try await audit.record(accountID, kind, .refusedLocked, origin)
            throw SignInRefusal.locked
        }
        switch (counted, outcome) {
        case (.valid, .success(let stored)):
            return stored
        case (.wrong(let failure), .failure(let error)):
            let words: AuditOutcome =
                switch failure {
                case .counted: .wrongPasskey
                case .delayed: .wrongPasskeyDelayed
                case .locked: .wrongPasskeyLocked
                }
            try await audit.record(accountID, kind, words, origin)
            try await auditIfCounter(error, accountID: accountID, kind: kind, origin: origin)
            switch failure {
            case .counted: throw error
            case .delayed(let until, _): throw SignInRefusal.delayed(until: until)
            case .locked: throw SignInRefusal.locked
            }
        default:
            preconditionFailure("the lockout count and the check disagree")
        }
    }

    /// A counter that did not increase is reported beside the refusal: the owner should learn that a copy
    /// of a device-bound passkey may exist.
    func auditIfCounter(
        _ error: PasskeyError,
        accountID: String,
        kind: AuditKind,
        origin: RequestOrigin
    )
        async throws
    {
        guard case .counterNotIncreasing = error else { return }
        try await audit.record(accountID, kind, .passkeyCounterNotIncreasing, origin)
    }

    /// A discoverable sign-in: a user-verified passkey is two factors, so the session follows at once.
    /// Each attempt takes one of the address's sign-in tokens, given back on success.
    public func finishSignIn(
        _ finish: PasskeyAssertionFinish,
        origin: RequestOrigin
    ) async throws -> NewSession {
        let throttle = signIn.signInFailures
        if let wait = throttle.take(origin.address, now: clock.now()) {
            throw RequestError.rateLimited(retryAfter: wait)
        }
        let a: Attempt
        do { a = try await attempt(finish, kind: .signIn, accountID: nil, boundTo: nil) } catch {
            throttle.refund(origin.address, now: clock.now())  // nothing was checked
            throw error
        }
        let stored = try await checkCounted(a, audit: .signIn, origin: origin)
        return try await signIn.finishSecondFactor(
            accountID: stored.accountID,
            method: .passkey,
            origin: origin,
            passkeyID: stored.id
        )
    }

    /// Re-authenticates `auth`'s session with a passkey in place of the password (and second factor).
    public func finishReauthentication(
        _ auth: Authenticated,
        _ finish: PasskeyAssertionFinish,
        origin: RequestOrigin
    ) async throws {
        let throttle = signIn.signInFailures
        if let wait = throttle.take(origin.address, now: clock.now()) {
            throw RequestError.rateLimited(retryAfter: wait)
        }
        let a: Attempt
        do {
            a = try await attempt(
                finish,
                kind: .reauthentication,
                accountID: auth.account.id,
                boundTo: auth.session.tokenHash
            )
        } catch {
            throttle.refund(origin.address, now: clock.now())
            throw error
        }
        _ = try await checkCounted(a, audit: .reauth, origin: origin)
        try await signIn.finishReauthentication(
            tokenHash: auth.session.tokenHash,
            accountID: auth.account.id,
            method: .passkey,
            origin: origin
        )
    }

    // MARK: Managing

    public func rename(
        _ auth: Authenticated,
        id: String,
        name raw: String,
        origin: RequestOrigin
    ) async throws
        -> PasskeySummary
    {
        let name = try Self.validName(raw)
        guard id.utf8.count <= 64, try await store.renamePasskey(id: id, accountID: auth.account.id, name: name),
            let renamed = try await store.passkeys(accountID: auth.account.id).first(where: { $0.id == id })
        else { throw PasskeyError.notFound }
        try await audit.record(auth.account.id, .passkey, .renamed, origin)
        return Self.summary(renamed)
    }

    /// Removing a way to sign in is a change to the account's factors: a recent full authentication first.
    public func remove(_ auth: Authenticated, id: String, origin: RequestOrigin) async throws {
        try sessions.requireRecentAuthentication(auth, secondFactorChange: true)
        guard id.utf8.count <= 64,
            try await store.removePasskey(id: id, accountID: auth.account.id, keepingSession: auth.session.tokenHash)
        else { throw PasskeyError.notFound }
        try await audit.record(auth.account.id, .passkey, .removed, origin)
    }
}
