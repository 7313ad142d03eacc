import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import Logging

/// The second factor of a sign-in or re-authentication: the transaction, its codes, passkey and push,
/// and collecting the session it ends in.
extension MFAService {

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
        /// Which password the sign-in was begun with (`SignInService.passwordTag`): a change of password
        /// before the session is collected voids it. Nil on rows written before it was kept.
        var passwordTag: String?

        var method: SecondFactorMethod { viaPasskey == true ? .passkey : viaPush ? .push : .code }
    }

    /// Asked by the sign-in and re-authentication routes after a correct password: the transaction of
    /// the second factor to finish, or nil when the account has none. `offerPush: false` (the client will
    /// give a code): no push is sent or counted.
    package func secondFactor(
        after verified: VerifiedPassword,
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
        let authenticators = try await authenticatorStore.authenticators(accountID: account.id)
        let (s, _) = try await state(account.id)
        guard !authenticators.isEmpty || s.totpConfirmed else { return nil }
        let recovery = try await recoveryCodeStore.recoveryCodesLeft(accountID: account.id)
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
            passwordTag: SignInService.passwordTag(account.passwordHash)
        )
        // A cap on transactions per account within one lifetime: each sends pushes and holds rows, and
        // signing in again must not be a way around anything.
        guard
            try await transactionStore.createTransaction(
                id: id,
                accountID: account.id,
                bindingHash: TokenHash.hex(binding),
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
            try await transactionStore.addChallenges(challenges, expiresAt: tx.expiresAt)
            try await update(account.id) { $0.fatigue.pushed() }
            publish(.challenge(devices: pushTargets.map(\.deviceID)))
            notify(pushTargets.map(\.deviceID), id, tx.expiresAt)
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
        guard id.utf8.count <= 64, let row = try await transactionStore.transaction(id: id),
            row.bindingHash == TokenHash.hex(binding)
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
    func transition(
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
            if try await transactionStore.updateTransaction(
                id: id,
                state: try JSONEncoder().encode(s),
                finished: s.tx.status.isTerminal,
                expected: version
            ) {
                if s.tx.status.isTerminal { try await transactionStore.removeChallenges(transactionID: id) }
                publish(.transaction(id: id))
                return (s, outcome)
            }
        }
        throw RequestError.serverBusy
    }

    func transition(
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
                return try await self.recoveryCodeStore.spendRecoveryCode(accountID: accountID, hash: hash)
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
            let counted: SignInService.FactorCheck
            do {
                counted = try await signIn.checkSecondFactor(accountID: accountID) { try await check(accountID) }
            } catch SignInRefusal.locked {
                // Refused by the lock or the delay, before or after the check: audited as passwords are.
                try await audit.record(accountID, .mfa, .refusedLocked, origin)
                throw SignInRefusal.locked
            } catch SignInRefusal.delayed(let until) {
                try await audit.record(accountID, .mfa, .refusedDelayed, origin)
                throw SignInRefusal.delayed(until: until)
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
        for a in try await authenticatorStore.authenticators(accountID: accountID) {
            let secret = try box.open(a.sealedTOTPSecret, for: a.deviceID)
            let otp = try OTPGenerator(secret: secret, algorithm: .sha1, digits: 6, period: Self.totpPeriod)
            if let step = otp.verify(code, at: now, window: 1, lastAcceptedStep: a.lastStep),
                try await authenticatorStore.advanceStep(deviceID: a.deviceID, to: step)
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
    func settle(
        _ s: Stored,
        _ outcome: MFATransaction.Outcome,
        origin: RequestOrigin,
        method: SecondFactorMethod
    ) async throws {
        switch outcome {
        case .completed:
            try await update(s.tx.accountID) { $0.fatigue.finished(outcome, viaPush: s.viaPush, now: clock.now()) }
            try await audit.record(s.tx.accountID, .mfa, .approved(via: method), origin)
        case .failed(let why):
            try await update(s.tx.accountID) { $0.fatigue.finished(outcome, viaPush: s.viaPush, now: clock.now()) }
            if why == .tooManyCodes {
                // Each wrong code was counted as it was checked.
                try await audit.record(s.tx.accountID, .signIn, .secondFactorFailed(why), origin)
            } else {
                try await signIn.countSecondFactorFailure(
                    accountID: s.tx.accountID,
                    outcome: .secondFactorFailed(why),
                    origin: origin
                )
            }
        case .stillOpen:
            try await audit.record(s.tx.accountID, .mfa, .wrongCode(via: method), origin)
        case .refused:
            break
        }
    }

    public enum Collected: Sendable {
        /// A sign-in's new session.
        case session(NewSession)
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
        try await signIn.finishReauthentication(
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
    ) async throws -> NewSession? {
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
                let session = try await signIn.finishSecondFactor(
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
}
