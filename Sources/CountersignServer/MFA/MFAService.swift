import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import Logging

/// Multi-factor sign-in (docs/PROTOCOL.md §3): pairing authenticators, the second factor of sign-in (push
/// with number matching, passcodes, recovery codes), authentication codes. The rules are the pure types
/// of this folder; this service loads them, applies one transition, and stores the result by
/// compare-and-set. Clock and randomness are injected; nothing here knows about HTTP.
public final class MFAService: Sendable {
    let store: any MFAStore
    /// Whether an account has passkeys, to offer one as the second factor.
    let passkeys: any PasskeyStore
    let accounts: AccountService
    let devices: DeviceService
    let clock: any WallClock
    let random: any RandomSource
    let signer: ChallengeSigner
    let box: SecretBox
    let recoveryKey: [UInt8]
    /// What challenges name as their issuer and answers as their audience: `countersign:` and the
    /// challenge key's ID, the same on every node of one deployment and different between deployments.
    let issuer: String
    /// Tells every node's push channel: devices that have a new challenge, transactions that changed.
    let publish: @Sendable (PushSignal) -> Void
    let pairingAttempts = AddressThrottle(.init(capacity: 10, window: 600))
    let authCodeRequests = AddressThrottle(.init(capacity: 30, window: 600))
    /// Confirming an authenticator app guesses a 6-digit code: 5 tries per 10 minutes per account.
    let enrollmentAttempts = AddressThrottle(.init(capacity: 5, window: 600))
    /// Log uploads (up to 256 KiB each) per authenticator: 10 a day.
    let logUploads = AddressThrottle(.init(capacity: 10, window: 86_400))
    /// How long uploaded authenticator logs are kept for support.
    static let logRetention: TimeInterval = 30 * 86_400

    static let transactionLifetime: TimeInterval = 60
    /// Sign-ins waiting for a second factor (unexpired, unfinished transactions) per account.
    static let maxOpenTransactions = 5
    static let totpPeriod = 30

    init(
        store: any MFAStore,
        passkeys: any PasskeyStore,
        accounts: AccountService,
        devices: DeviceService,
        clock: any WallClock,
        random: any RandomSource,
        publish: @escaping @Sendable (PushSignal) -> Void
    ) async throws {
        self.store = store
        self.passkeys = passkeys
        self.accounts = accounts
        self.devices = devices
        self.clock = clock
        self.random = random
        self.publish = publish
        signer = try await ChallengeSigner(
            privateScalar: try await store.serverSecret(name: "mfa-challenge-key") {
                Identity.generate().privateScalar
            }
        )
        issuer = "countersign:" + signer.kid
        box = SecretBox(
            key: SymmetricKey(data: try await store.serverSecret(name: "mfa-secret-key") { random.bytes(32) })
        )
        recoveryKey = try await store.serverSecret(name: "mfa-recovery-key") { random.bytes(32) }
    }

    /// A service with no push channel, for tools that fill a database before any server runs on it (the
    /// benchmarks' fixtures): challenges are stored but signal no one.
    public convenience init(
        store: any MFAStore,
        passkeys: any PasskeyStore,
        accounts: AccountService,
        devices: DeviceService,
        clock: any WallClock,
        random: any RandomSource
    ) async throws {
        try await self.init(
            store: store,
            passkeys: passkeys,
            accounts: accounts,
            devices: devices,
            clock: clock,
            random: random,
            publish: { _ in }
        )
    }

    // MARK: Account state

    struct AccountState: Codable, Sendable {
        var fatigue = PushFatigue()
        var matching = NumberMatching.Kind.enterManually
        var digits = 2
        /// An authenticator app: its secret sealed under the server key, confirmed by one code.
        var totpSecret: [UInt8]?
        var totpConfirmed = false
        var totpLastStep: UInt64?
        /// A new enrollment waiting for its first code; the confirmed one stays until it is confirmed.
        var pendingTotpSecret: [UInt8]?
    }

    func state(_ accountID: String) async throws -> (AccountState, Int64?) {
        guard let (data, version) = try await store.accountState(accountID) else { return (AccountState(), nil) }
        return (try JSONDecoder().decode(AccountState.self, from: data), version)
    }

    /// Applies `change` to the account's state by compare-and-set, retrying on a concurrent write.
    @discardableResult
    func update<T>(_ accountID: String, _ change: (inout AccountState) throws -> T) async throws -> T {
        for _ in 0..<8 {
            var (s, version) = try await state(accountID)
            let result = try change(&s)
            if try await store.saveAccountState(accountID, state: try JSONEncoder().encode(s), expected: version) {
                return result
            }
        }
        throw RequestError.serverBusy
    }

    public func status(_ auth: Authenticated) async throws -> MFAStatus {
        let (s, _) = try await state(auth.account.id)
        let authenticators = try await store.authenticators(accountID: auth.account.id)
        var infos: [AuthenticatorInfo] = []
        for a in authenticators {
            let name = try await devices.store.device(id: a.deviceID)?.name ?? ""
            infos.append(
                AuthenticatorInfo(deviceId: a.deviceID, name: name, pairedAt: a.pairedAt, pushAllowed: a.pushAllowed)
            )
        }
        let codes = try await store.recoveryCodesLeft(accountID: auth.account.id)
        return MFAStatus(
            enabled: !authenticators.isEmpty || s.totpConfirmed,
            authenticators: infos,
            totpApp: s.totpConfirmed,
            recoveryCodesLeft: codes,
            pushSuspended: s.fatigue.suspended,
            numberMatching: s.matching.rawValue,
            numberDigits: s.digits
        )
    }

    public func updateSettings(_ auth: Authenticated, _ settings: MFASettings) async throws -> MFAStatus {
        try accounts.requireRecentAuthentication(auth, secondFactorChange: true)
        guard let kind = NumberMatching.Kind(rawValue: settings.numberMatching) else {
            throw RequestError.invalidField(field: "numberMatching", reason: "ENTER_MANUALLY or SELECT_NUMBER")
        }
        guard settings.numberDigits == 2 || settings.numberDigits == 6 else {
            throw RequestError.invalidField(field: "numberDigits", reason: "2 or 6")
        }
        try await update(auth.account.id) {
            $0.matching = kind
            $0.digits = settings.numberDigits
        }
        try await accounts.audit(
            auth.account.id,
            .mfaSettings,
            .numberMatching(kind, digits: settings.numberDigits),
            origin(auth)
        )
        return try await status(auth)
    }

    private func origin(_ auth: Authenticated) -> RequestOrigin {
        RequestOrigin(address: auth.session.address, userAgent: auth.session.userAgent)
    }

    // MARK: Pairing

    public func pairingKey(_ auth: Authenticated, server: String) async throws -> PairingKeyResponse {
        try accounts.requireRecentAuthentication(auth, secondFactorChange: true)
        let now = clock.now()
        let (text, record) = PairingKey.make(accountID: auth.account.id, now: now, random: random)
        guard
            try await store.createPairingKey(
                hash: record.hash,
                accountID: auth.account.id,
                expiresAt: record.expiresAt,
                maxOpen: PairingKey.maxOpenPerAccount,
                now: now
            )
        else {
            throw MFAError.tooManyPairingKeys
        }
        try await accounts.audit(auth.account.id, .mfaPairingKey, .created, origin(auth))
        return PairingKeyResponse(
            key: text,
            uri: Self.uri("pair", ["key": text, "server": server]),
            expiresAt: record.expiresAt
        )
    }

    static func uri(_ kind: String, _ items: KeyValuePairs<String, String>) -> String {
        var c = URLComponents()
        c.scheme = "countersign"
        c.host = kind
        c.queryItems = items.map { URLQueryItem(name: $0.key, value: $0.value) }
        return c.string ?? "countersign://\(kind)"
    }

    public func pair(_ request: PairingRequest, origin: RequestOrigin) async throws -> PairingInfo {
        let now = clock.now()
        if let wait = pairingAttempts.take(origin.address, now: now) {
            throw RequestError.rateLimited(retryAfter: wait)
        }
        let name = try DeviceName(parsing: request.name).text
        let signing = try DeviceService.publicKey("signingKey", request.signingKey)
        let encryption = try DeviceService.publicKey("encryptionKey", request.encryptionKey)
        guard let key = PairingKey.parse(request.pairingKey) else { throw MFAError.pairingKeyInvalid }
        let keyHash = PairingKey.hash(key)
        guard
            signing.isValidSignature(
                request.signature.bytes,
                for: DeviceProof.pairingMessage(pairingKey: key, signingKey: signing, encryptionKey: encryption)
            )
        else {
            // Spent all the same, and one answer for wrong, used and expired keys.
            guard let accountID = try await store.spendPairingKey(hash: keyHash, now: now) else {
                throw MFAError.pairingKeyInvalid
            }
            try await accounts.audit(accountID, .mfaPair, .badSignature, origin)
            throw DeviceError.badSignature(
                "the signature does not verify with signingKey over the pairing message (docs/PROTOCOL.md §3)"
            )
        }
        // The key is spent, and the device, its authenticator record and its session stored, in one write.
        let devices = devices
        let deviceID = accounts.newID()
        let secret = random.bytes(20)
        let sealedSecret = try box.seal(secret, for: deviceID)
        let token = devices.newSessionToken()
        let records = { @Sendable (accountID: String) throws -> PairingRecords in
            let device = devices.authenticatorRecord(
                id: deviceID,
                accountID: accountID,
                name: name,
                signing: signing,
                encryption: encryption,
                at: now
            )
            return PairingRecords(
                device: device,
                authenticator: AuthenticatorRecord(
                    deviceID: deviceID,
                    accountID: accountID,
                    pushAllowed: true,
                    sealedTOTPSecret: sealedSecret,
                    lastStep: nil,
                    pairedAt: now
                ),
                session: devices.sessionRecord(token: token, device: device, at: now)
            )
        }
        // Made before the write: nothing that can fail comes between storing the pairing and answering it.
        let envelope = try MessageEnvelope.seal(
            secret,
            contentType: "application/x-countersign-totp-secret",
            from: signer.identity,
            to: [encryption],
            created: now
        )
        let accountID: String
        switch try await store.pair(
            keyHash: keyHash,
            now: now,
            maxDevices: devices.config.maxDevicesPerAccount,
            records
        ) {
        case .paired(let id): accountID = id
        case .keyInvalid, .refused(.notFound): throw MFAError.pairingKeyInvalid
        case .accountLocked: throw AccountError.accountLocked
        case .refused(.limitReached): throw DeviceError.deviceLimit(devices.config.maxDevicesPerAccount)
        case .refused(.keyInUse):
            throw DeviceError.keyInUse("a key of this device is already registered; make new keys")
        case .refused(.done), .refused(.changed): throw RequestError.unauthenticated
        }
        guard let account = try await accounts.account(id: accountID) else { throw MFAError.pairingKeyInvalid }
        let stored = try records(accountID)  // what the store wrote: `records` makes the same each time
        // The pairing is stored: an audit write that fails must not keep its answer from the authenticator.
        try? await accounts.audit(accountID, .mfaPair, .success, origin)
        return PairingInfo(
            authenticators: [
                .init(type: "push", status: "COMPLETED"), .init(type: "oneTimePasscode", status: "COMPLETED"),
            ],
            deviceId: deviceID,
            username: account.username,
            session: DeviceSession(
                token: token,
                expiresAt: stored.session.expiresAt,
                device: DeviceRoutes.device(stored.device),
                username: account.username
            ),
            jwks: signer.jwks,
            totp: SealedTOTP(envelope: Base64URL(envelope.bytes), period: Self.totpPeriod)
        )
    }

    // MARK: The second factor of sign-in

    /// What the store keeps of a transaction: the rules' value and what the view needs.
    struct Stored: Codable, Sendable {
        var tx: MFATransaction
        var context: ClientContextClaim
        var methods: [String]
        var viaPush = false
        /// Completed by a passkey (audited as such when collected). Nil on rows written before it was kept.
        var viaPasskey: Bool?
        /// A re-authentication's: the token hash of the account session that asked (nil: a sign-in).
        var reauthSession: String?
        /// Which password the sign-in was begun with (`AccountService.passwordTag`): a change of password
        /// before the session is collected voids it. Nil on rows written before it was kept.
        var passwordTag: String?

        var method: SecondFactorMethod { viaPasskey == true ? .passkey : viaPush ? .push : .code }
    }

    /// Asked by the sign-in and re-authentication routes after a correct password: the transaction of
    /// the second factor to finish, or nil when the account has none. `offerPush: false` (the client will
    /// give a code): no push is sent or counted.
    package func secondFactor(
        after verified: AccountService.VerifiedPassword,
        offerPush: Bool = true
    ) async throws -> MFARequired? {
        var session: String?
        if case .reauthentication(let tokenHash) = verified.purpose { session = tokenHash }
        return try await begin(
            account: verified.account,
            origin: verified.origin,
            now: verified.at,
            reauthenticating: session,
            offerPush: offerPush
        )
    }

    private func begin(
        account: AccountRecord,
        origin: RequestOrigin,
        now: Date,
        reauthenticating session: String?,
        offerPush: Bool
    ) async throws -> MFARequired? {
        let authenticators = try await store.authenticators(accountID: account.id)
        let (s, _) = try await state(account.id)
        guard !authenticators.isEmpty || s.totpConfirmed else { return nil }
        let recovery = try await store.recoveryCodesLeft(accountID: account.id)
        let (allowed, digits) = s.fatigue.allowsPush(now: now, policyDigits: s.digits)
        let pushTargets = allowed && offerPush ? authenticators.filter(\.pushAllowed) : []
        let id = accounts.newID()
        let binding = "csb_" + Base64URL(random.bytes(32)).text
        var nonces: [String: [UInt8]] = [:]
        for a in pushTargets { nonces[a.deviceID] = random.bytes(32) }
        let matching = pushTargets.isEmpty ? nil : NumberMatching.make(kind: s.matching, digits: digits, random: random)
        let tx = MFATransaction(
            id: id,
            accountID: account.id,
            now: now,
            lifetime: Self.transactionLifetime,
            challenges: nonces,
            matching: matching
        )
        var methods = pushTargets.isEmpty ? [] : ["push"]
        methods.append("totp")
        if try await !passkeys.passkeys(accountID: account.id).isEmpty { methods.append("passkey") }
        if recovery > 0 { methods.append("recoveryCode") }
        let context = ClientContextClaim(
            address: origin.address,
            userAgent: String(origin.userAgent.prefix(256)),
            time: Int64(now.timeIntervalSince1970)
        )
        let stored = Stored(
            tx: tx,
            context: context,
            methods: methods,
            reauthSession: session,
            passwordTag: AccountService.passwordTag(account.passwordHash)
        )
        // A cap on transactions per account within one lifetime: each sends pushes and holds rows, and
        // signing in again must not be a way around anything.
        guard
            try await store.createTransaction(
                id: id,
                accountID: account.id,
                bindingHash: AccountService.tokenHash(binding),
                state: try JSONEncoder().encode(stored),
                expiresAt: tx.expiresAt,
                maxOpen: Self.maxOpenTransactions,
                now: now
            )
        else {
            throw MFAError.tooManyPendingSignIns(retryAfter: Self.transactionLifetime)
        }
        if let matching, !pushTargets.isEmpty {
            var challenges: [(deviceID: String, transactionID: String, jwt: String)] = []
            for a in pushTargets {
                let claims = ChallengeClaims(
                    iss: issuer,
                    aud: a.deviceID,
                    sub: account.username,
                    txn: id,
                    nonce: Base64URL(nonces[a.deviceID]!).text,
                    iat: Int64(now.timeIntervalSince1970),
                    exp: Int64(tx.expiresAt.timeIntervalSince1970),
                    ctx: context,
                    nm: .init(
                        type: matching.kind.rawValue,
                        options: matching.kind == .selectNumber ? matching.options : nil
                    ),
                    purpose: session == nil ? nil : ChallengeClaims.reauthentication
                )
                challenges.append((a.deviceID, id, try await signer.sign(claims)))
            }
            try await store.addChallenges(challenges, expiresAt: tx.expiresAt)
            try await update(account.id) { $0.fatigue.pushed() }
            publish(.challenge(devices: pushTargets.map(\.deviceID)))
        }
        return MFARequired(transaction: view(stored, now: now), binding: binding)
    }

    func view(_ s: Stored, now: Date) -> MFATransactionView {
        let status = s.tx.status(at: now)
        let open = !status.isTerminal
        return MFATransactionView(
            id: s.tx.id,
            status: status.rawValue,
            methods: open ? s.methods : [],
            expiresAt: s.tx.expiresAt,
            numberMatching: s.tx.matching.map { NumberMatchingView(type: $0.kind.rawValue, number: $0.number) },
            failure: s.tx.failure?.rawValue,
            attemptsLeft: open ? MFATransaction.maxCodeAttempts - s.tx.codeAttempts : nil
        )
    }

    /// The transaction behind `id`, if `binding` is its binding secret (compared as hashes).
    private func load(id: String, binding: String?) async throws -> (Stored, Int64) {
        guard let binding, binding.hasPrefix("csb_"), binding.utf8.count <= 64 else { throw MFAError.noBinding }
        guard id.utf8.count <= 64, let row = try await store.transaction(id: id),
            row.bindingHash == AccountService.tokenHash(binding)
        else {
            throw MFAError.transactionNotFound
        }
        return (try JSONDecoder().decode(Stored.self, from: row.state), row.version)
    }

    public func transaction(id: String, binding: String?) async throws -> MFATransactionView {
        view(try await load(id: id, binding: binding).0, now: clock.now())
    }

    /// Applies one transition by compare-and-set: of concurrent callers exactly one changes the stored
    /// state; the others reload and see it (a terminal state refuses them). `reload` reads the row and
    /// checks the caller's right to it (the binding secret, or the answering device's account).
    private func transition(
        id: String,
        reload: () async throws -> (Stored, Int64),
        _ apply: (inout Stored) async throws -> MFATransaction.Outcome
    )
        async throws -> (Stored, MFATransaction.Outcome)
    {
        for _ in 0..<8 {
            var (s, version) = try await reload()
            let outcome = try await apply(&s)
            if case .refused = outcome { return (s, outcome) }
            if try await store.updateTransaction(
                id: id,
                state: try JSONEncoder().encode(s),
                finished: s.tx.status.isTerminal,
                expected: version
            ) {
                if s.tx.status.isTerminal { try await store.removeChallenges(transactionID: id) }
                publish(.transaction(id: id))
                return (s, outcome)
            }
        }
        throw RequestError.serverBusy
    }

    private func transition(
        id: String,
        binding: String?,
        _ apply: (inout Stored) async throws -> MFATransaction.Outcome
    )
        async throws -> (Stored, MFATransaction.Outcome)
    {
        try await transition(id: id, reload: { try await load(id: id, binding: binding) }, apply)
    }

    public enum CodeKind: Sendable { case totp, recovery }

    public func submitCode(
        id: String,
        binding: String?,
        code: String,
        kind: CodeKind,
        origin: RequestOrigin
    ) async throws -> MFATransactionView {
        let now = clock.now()
        let recoveryKey = self.recoveryKey
        return try await submitFactor(
            id: id,
            binding: binding,
            method: kind == .totp ? .totp : .recoveryCode,
            origin: origin
        ) { accountID in
            switch kind {
            case .totp: return try await self.checkPasscode(accountID: accountID, code: code, now: now)
            case .recovery:
                guard let hash = RecoveryCodes.hash(typed: code, key: recoveryKey) else { return false }
                return try await self.store.spendRecoveryCode(accountID: accountID, hash: hash)
            }
        }
    }

    /// The account whose sign-in `id` is, if `binding` is its binding secret and it is still open.
    func openTransactionAccount(id: String, binding: String?) async throws -> String {
        let (s, _) = try await load(id: id, binding: binding)
        let status = s.tx.status(at: clock.now())
        guard !status.isTerminal else { throw MFAError.notCompleted(status.rawValue) }
        return s.tx.accountID
    }

    /// A second factor checked by `check` (given the account): a passcode, a recovery code, a passkey's
    /// assertion. Wrong ones count like wrong codes, on the transaction and under the lockout rule.
    func submitFactor(
        id: String,
        binding: String?,
        method: SecondFactorMethod,
        origin: RequestOrigin,
        check: (String) async throws -> Bool
    ) async throws -> MFATransactionView {
        let now = clock.now()
        // Checked once, before the compare-and-set: checking spends the code (or the TOTP step), so a
        // retry after a concurrent write must not check it again and find it spent.
        // Each check is counted under the account's lockout rule, across transactions and
        // re-authentications (`checkSecondFactor`): a new transaction is no new budget of guesses.
        let (before, _) = try await load(id: id, binding: binding)
        var valid = false
        var exhausted = false
        if !before.tx.status(at: now).isTerminal {
            let accountID = before.tx.accountID
            let counted: AccountService.FactorCheck
            do {
                counted = try await accounts.checkSecondFactor(accountID: accountID) { try await check(accountID) }
            } catch AccountError.accountLocked {
                // Refused by the lock or the delay, before or after the check: audited as passwords are.
                try await accounts.audit(accountID, .mfa, .refusedLocked, origin)
                throw AccountError.accountLocked
            } catch AccountError.signInDelayed(let until) {
                try await accounts.audit(accountID, .mfa, .refusedDelayed, origin)
                throw AccountError.signInDelayed(until: until)
            }
            switch counted {
            case .valid: valid = true
            case .wrong(.counted): break
            case .wrong: exhausted = true  // the account is delayed or locked now: no further checks
            }
        }
        let (s, outcome) = try await transition(id: id, binding: binding) { s in
            if valid {
                s.viaPush = false
                s.viaPasskey = method == .passkey
            }
            return s.tx.code(valid: valid, exhausted: exhausted, now: now)
        }
        try await settle(s, outcome, origin: origin, method: method)
        return view(s, now: now)
    }

    /// A passcode from any of the account's authenticators or its authenticator app, ±1 step, each
    /// step accepted once per source.
    private func checkPasscode(accountID: String, code: String, now: Date) async throws -> Bool {
        guard code.count == 6, code.allSatisfy(\.isASCII), code.allSatisfy(\.isNumber) else { return false }
        for a in try await store.authenticators(accountID: accountID) {
            let secret = try box.open(a.sealedTOTPSecret, for: a.deviceID)
            let otp = try OTPGenerator(secret: secret, algorithm: .sha1, digits: 6, period: Self.totpPeriod)
            if let step = otp.verify(code, at: now, window: 1, lastAcceptedStep: a.lastStep),
                try await store.advanceStep(deviceID: a.deviceID, to: step)
            {
                return true
            }
        }
        let (s, _) = try await state(accountID)
        if s.totpConfirmed, let sealed = s.totpSecret {
            let otp = try OTPGenerator(
                secret: try box.open(sealed, for: accountID),
                algorithm: .sha1,
                digits: 6,
                period: Self.totpPeriod
            )
            if let step = otp.verify(code, at: now, window: 1, lastAcceptedStep: s.totpLastStep) {
                return try await update(accountID) { st -> Bool in
                    guard st.totpLastStep.map({ step > $0 }) ?? true else { return false }
                    st.totpLastStep = step
                    return true
                }
            }
        }
        return false
    }

    /// Bookkeeping after a transition: fatigue, lockout, audit.
    private func settle(
        _ s: Stored,
        _ outcome: MFATransaction.Outcome,
        origin: RequestOrigin,
        method: SecondFactorMethod
    ) async throws {
        switch outcome {
        case .completed:
            try await update(s.tx.accountID) { $0.fatigue.finished(outcome, viaPush: s.viaPush, now: clock.now()) }
            try await accounts.audit(s.tx.accountID, .mfa, .approved(via: method), origin)
        case .failed(let why):
            try await update(s.tx.accountID) { $0.fatigue.finished(outcome, viaPush: s.viaPush, now: clock.now()) }
            if why == .tooManyCodes {
                // Each wrong code was counted as it was checked.
                try await accounts.audit(s.tx.accountID, .signIn, .secondFactorFailed(why), origin)
            } else {
                try await accounts.countSecondFactorFailure(
                    accountID: s.tx.accountID,
                    outcome: .secondFactorFailed(why),
                    origin: origin
                )
            }
        case .stillOpen:
            try await accounts.audit(s.tx.accountID, .mfa, .wrongCode(via: method), origin)
        case .refused:
            break
        }
    }

    public enum Collected: Sendable {
        /// A sign-in's new session.
        case session(AccountService.NewSession)
        /// A re-authentication's: the session that asked is freshly authenticated.
        case reauthenticated
    }

    /// What the binding client gets, once, after COMPLETED: a sign-in's session, or its re-authentication.
    public func collect(id: String, binding: String?, origin: RequestOrigin) async throws -> Collected {
        let now = clock.now()
        if let session = try await collectSignIn(id: id, binding: binding, origin: origin, now: now) {
            return .session(session)
        }
        var collected = false
        let (s, _) = try await transition(id: id, binding: binding) { s in
            guard s.tx.status(at: now) == .completed, s.tx.collect(now: now) else { return .refused(.finished) }
            collected = true
            return .completed
        }
        guard collected else {
            throw s.tx.status(at: now) == .completed
                ? MFAError.alreadyCollected : MFAError.notCompleted(s.tx.status(at: now).rawValue)
        }
        // Locked or delayed between the password and the second factor (failures elsewhere meanwhile):
        // no session (`finishSecondFactor`, `finishReauthentication`). Collected only soon after the
        // factor: a completed transaction kept for later must not give a session, or make one fresh, long
        // after the fact; nor once the password it began with has changed.
        guard now <= s.tx.expiresAt.addingTimeInterval(Self.transactionLifetime) else {
            throw MFAError.signInSuperseded
        }
        // A transaction is a re-authentication's from its start (collectSignIn took every sign-in's).
        guard let session = s.reauthSession else { throw RequestError.serverBusy }
        try await accounts.finishReauthentication(
            tokenHash: session,
            accountID: s.tx.accountID,
            method: s.method,
            passwordTag: s.passwordTag,
            origin: origin
        )
        return .reauthenticated
    }

    /// A sign-in's session, collected in one write with the transaction marked collected (`SessionClaim`):
    /// a kill between them cannot leave it collected with no session. Nil for a re-authentication's
    /// transaction, which `collect` finishes.
    private func collectSignIn(
        id: String,
        binding: String?,
        origin: RequestOrigin,
        now: Date
    ) async throws -> AccountService.NewSession? {
        for _ in 0..<8 {
            var (s, version) = try await load(id: id, binding: binding)
            guard s.reauthSession == nil else { return nil }
            let status = s.tx.status(at: now)
            guard status == .completed, s.tx.collect(now: now) else {
                throw status == .completed ? MFAError.alreadyCollected : MFAError.notCompleted(status.rawValue)
            }
            // As `collect` says: soon after the factor, or never.
            guard now <= s.tx.expiresAt.addingTimeInterval(Self.transactionLifetime) else {
                throw MFAError.signInSuperseded
            }
            do {
                let session = try await accounts.finishSecondFactor(
                    accountID: s.tx.accountID,
                    method: s.method,
                    passwordTag: s.passwordTag,
                    origin: origin,
                    claim: .mfaTransaction(id: id, state: try JSONEncoder().encode(s), expected: version)
                )
                publish(.transaction(id: id))
                return session
            } catch is SessionClaimLost {
                continue
            }
        }
        throw RequestError.serverBusy
    }

    // MARK: Authenticators answering

    public func challenges(_ auth: DeviceAuthenticated) async throws -> PushChallengeList {
        guard auth.device.kind == DeviceRecord.authenticator else { throw MFAError.notAnAuthenticator }
        return PushChallengeList(
            challenges: try await store.pendingChallenges(deviceID: auth.device.id, now: clock.now()).map(
                PushChallenge.init
            )
        )
    }

    func pendingChallenges(deviceID: String) async throws -> [String] {
        try await store.pendingChallenges(deviceID: deviceID, now: clock.now())
    }

    public func answer(
        _ auth: DeviceAuthenticated,
        _ answer: PushAnswer,
        origin: RequestOrigin
    ) async throws -> PushAnswerResult {
        guard auth.device.kind == DeviceRecord.authenticator else { throw MFAError.notAnAuthenticator }
        guard let claims = await ChallengeSigner.verifyAnswer(answer.jwt, signingKey: auth.device.signingKey) else {
            throw DeviceError.badSignature(
                "the answer must be an ES256 JWT signed by this authenticator's signing key (docs/PROTOCOL.md §3)"
            )
        }
        let now = clock.now()
        guard claims.iss == auth.device.id, claims.aud == issuer, ["APPROVE", "DENY"].contains(claims.decision),
            let nonce = Base64URL(text: claims.nonce)
        else {
            throw RequestError.invalidField(
                field: "jwt",
                reason: "iss must be this device, aud the challenge's iss, decision APPROVE or DENY"
            )
        }
        // An answer is made for one challenge, within its minute: one made long before or after is stale.
        guard abs(Double(claims.iat) - now.timeIntervalSince1970) <= 300 else {
            throw RequestError.invalidField(field: "jwt", reason: "iat is more than 5 minutes from the server's clock")
        }
        // The transaction's binding is not the device's to know: it is looked up by id, and only this
        // account's transactions that challenged this very device (the nonce) accept the answer.
        let reload = { () async throws -> (Stored, Int64) in
            guard let row = try await self.store.transaction(id: claims.txn), row.accountID == auth.account.id else {
                throw MFAError.transactionNotFound
            }
            return (try JSONDecoder().decode(Stored.self, from: row.state), row.version)
        }
        let (s, outcome) = try await transition(id: claims.txn, reload: reload) { s in
            let o = s.tx.answer(
                device: auth.device.id,
                nonce: nonce.bytes,
                approve: claims.decision == "APPROVE",
                number: claims.number,
                report: claims.report ?? false,
                now: now
            )
            if case .completed = o { s.viaPush = true }
            if case .failed = o { s.viaPush = true }
            return o
        }
        if case .refused(let why) = outcome { throw MFAError.answerRefused(why.rawValue) }
        try await settle(s, outcome, origin: origin, method: .push)
        return PushAnswerResult(status: s.tx.status(at: now).rawValue)
    }

    public func setPush(_ auth: DeviceAuthenticated, allowed: Bool) async throws -> PushPermission {
        guard auth.device.kind == DeviceRecord.authenticator else { throw MFAError.notAnAuthenticator }
        try await store.setPushAllowed(deviceID: auth.device.id, allowed)
        try await accounts.audit(
            auth.account.id,
            .mfaPush,
            allowed ? .allowed : .disallowed,
            RequestOrigin(address: "", userAgent: "authenticator \(auth.device.id)")
        )
        return PushPermission(allowed: allowed)
    }

    /// Keeps the device's log text (the SDK redacts it first) under a new support id.
    public func uploadLogs(_ auth: DeviceAuthenticated, text: String) async throws -> LogReceipt {
        guard auth.device.kind == DeviceRecord.authenticator else { throw MFAError.notAnAuthenticator }
        guard text.utf8.count <= 256 * 1024 else {
            throw RequestError.invalidField(field: "text", reason: "at most 256 KiB")
        }
        if let wait = logUploads.take("device " + auth.device.id, now: clock.now()) {
            throw RequestError.rateLimited(retryAfter: wait)
        }
        let id = HumanCode.generate(length: 10, random: random)
        try await store.addLog(
            supportID: id,
            deviceID: auth.device.id,
            accountID: auth.account.id,
            at: clock.now(),
            text: text
        )
        return LogReceipt(supportId: HumanCode.grouped(id, by: 5))
    }
}

extension Optional {
    func asyncMap<U>(_ transform: (Wrapped) async throws -> U) async rethrows -> U? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}
