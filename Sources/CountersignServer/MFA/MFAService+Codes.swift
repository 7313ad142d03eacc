import CountersignAPI
import CountersignCrypto
import Foundation

extension MFAService {
    // MARK: Authenticator app (TOTP)

    public func enrollTOTP(_ auth: Authenticated) async throws -> TOTPEnrollment {
        try sessions.requireRecentAuthentication(auth, secondFactorChange: true)
        let secret = random.bytes(20)
        let sealed = try box.seal(secret, for: auth.account.id)
        try await update(auth.account.id) { $0.pendingTotpSecret = sealed }
        let encoded = Base32.encode(secret)
        var c = URLComponents()
        c.scheme = "otpauth"
        c.host = "totp"
        c.path = "/Countersign:\(auth.account.username)"
        c.queryItems = [
            URLQueryItem(name: "secret", value: encoded), URLQueryItem(name: "issuer", value: "Countersign"),
            URLQueryItem(name: "algorithm", value: "SHA1"), URLQueryItem(name: "digits", value: "6"),
            URLQueryItem(name: "period", value: String(Self.totpPeriod)),
        ]
        try await audit.record(
            auth.account.id,
            .mfaTOTP,
            .enrollStarted,
            RequestOrigin(address: auth.session.address, userAgent: auth.session.userAgent)
        )
        return TOTPEnrollment(secret: encoded, uri: c.string ?? "")
    }

    public func confirmTOTP(_ auth: Authenticated, code: String) async throws -> MFAStatus {
        let now = clock.now()
        if let wait = enrollmentAttempts.take(auth.account.id, now: now) {
            throw MFAError.tooManyAttempts(retryAfter: wait)
        }
        let confirmed = try await update(auth.account.id) { s -> Bool? in
            guard let sealed = s.pendingTotpSecret else { return nil }
            let otp = try OTPGenerator(
                secret: try box.open(sealed, for: auth.account.id),
                algorithm: .sha1,
                digits: 6,
                period: Self.totpPeriod
            )
            guard let step = otp.verify(code.filter { $0 != " " }, at: now, window: 1, lastAcceptedStep: nil) else {
                return false
            }
            // The new app replaces the old one only now that it has proved it has the secret.
            s.totpSecret = sealed
            s.pendingTotpSecret = nil
            s.totpConfirmed = true
            s.totpLastStep = step
            return true
        }
        switch confirmed {
        case nil: throw MFAError.noPendingEnrollment
        case false?: throw MFAError.passcodeInvalid
        case true?:
            try await audit.record(
                auth.account.id,
                .mfaTOTP,
                .enrolled,
                RequestOrigin(address: auth.session.address, userAgent: auth.session.userAgent)
            )
            return try await status(auth)
        }
    }

    // MARK: Recovery codes

    public func regenerateRecoveryCodes(_ auth: Authenticated) async throws -> RecoveryCodeList {
        try sessions.requireRecentAuthentication(auth, secondFactorChange: true)
        let (shown, hashes) = RecoveryCodes.make(key: recoveryKey, random: random)
        try await recoveryCodeStore.replaceRecoveryCodes(accountID: auth.account.id, hashes: hashes)
        try await audit.record(
            auth.account.id,
            .mfaRecoveryCodes,
            .generated,
            RequestOrigin(address: auth.session.address, userAgent: auth.session.userAgent)
        )
        return RecoveryCodeList(codes: shown)
    }

    // MARK: Turning it off

    /// Unpairs every authenticator (their devices are revoked), drops the authenticator app and the
    /// recovery codes: the password alone signs in again.
    public func disable(_ auth: Authenticated, origin: RequestOrigin) async throws {
        try sessions.requireRecentAuthentication(auth, secondFactorChange: true)
        for deviceID in try await authenticatorStore.removeAuthenticators(accountID: auth.account.id) {
            _ = try await devices.revokeAuthenticator(deviceID: deviceID, accountID: auth.account.id)
        }
        try await update(auth.account.id) { $0 = AccountState() }
        try await recoveryCodeStore.replaceRecoveryCodes(accountID: auth.account.id, hashes: [])
        try await audit.record(auth.account.id, .mfa, .disabled, origin)
    }

    // MARK: Authentication codes (QR sign-in)

    struct StoredCode: Codable, Sendable {
        var code: AuthenticationCode
        var context: ClientContextClaim
        var collected = false
    }

    public func createAuthCode(
        _ request: AuthCodeRequest,
        origin: RequestOrigin,
        server: String
    ) async throws -> AuthCodeCreated {
        let now = clock.now()
        if let wait = authCodeRequests.take(origin.address, now: now) {
            throw RequestError.rateLimited(retryAfter: wait)
        }
        let approval: AuthenticationCode.Approval
        switch request.userApproval ?? "REQUIRED" {
        case "REQUIRED": approval = .required
        case "NOT_REQUIRED":
            guard config.authCodesWithoutApproval else {
                throw RequestError.invalidField(
                    field: "userApproval",
                    reason: """
                        NOT_REQUIRED is not allowed on this server: every QR sign-in is approved on the authenticator \
                        (its operator can allow it with COUNTERSIGN_AUTH_CODES_WITHOUT_APPROVAL=1)
                        """
                )
            }
            approval = .notRequired
        default: throw RequestError.invalidField(field: "userApproval", reason: "REQUIRED or NOT_REQUIRED")
        }
        let text = HumanCode.generate(length: AuthenticationCode.length, random: random)
        let binding = "csb_" + Base64URL(random.bytes(32)).text
        let code = AuthenticationCode(codeHash: PairingKey.hash(text), approval: approval, now: now)
        let stored = StoredCode(
            code: code,
            context: ClientContextClaim(
                address: origin.address,
                userAgent: String(origin.userAgent.prefix(256)),
                time: Int64(now.timeIntervalSince1970)
            )
        )
        try await authCodeStore.createAuthCode(
            hash: code.codeHash,
            bindingHash: TokenHash.hex(binding),
            state: try JSONEncoder().encode(stored),
            expiresAt: code.expiresAt
        )
        return AuthCodeCreated(
            code: text,
            uri: Self.uri("auth", ["authentication_code": text, "server": server]),
            expiresAt: code.expiresAt,
            binding: binding
        )
    }

    private func loadCode(binding: String?) async throws -> (String, StoredCode, Int64) {
        guard let binding, binding.hasPrefix("csb_"), binding.utf8.count <= 64 else { throw MFAError.noBinding }
        guard let row = try await authCodeStore.authCode(bindingHash: TokenHash.hex(binding)) else {
            throw MFAError.transactionNotFound
        }
        return (row.hash, try JSONDecoder().decode(StoredCode.self, from: row.state), row.version)
    }

    /// The code's state, and its hash (the key its changes are signalled under).
    public func authCodeStatus(binding: String?) async throws -> (hash: String, state: AuthCodeState) {
        let (hash, s, _) = try await loadCode(binding: binding)
        return (hash, AuthCodeState(status: s.code.status(at: clock.now()).rawValue, expiresAt: s.code.expiresAt))
    }

    /// The waiting screen's session, once, after COMPLETED.
    public func collectAuthCode(binding: String?, origin: RequestOrigin) async throws -> NewSession {
        for _ in 0..<8 {
            var (hash, s, version) = try await loadCode(binding: binding)
            let status = s.code.status(at: clock.now())
            guard status == .completed, let user = s.code.approvedUser else {
                throw MFAError.notCompleted(status.rawValue)
            }
            guard !s.collected else { throw MFAError.alreadyCollected }
            // Soon after the approval or never: an approved code kept for later must not give a session
            // after the account signed out everywhere or changed its password.
            guard clock.now() <= s.code.expiresAt.addingTimeInterval(AuthenticationCode.defaultLifetime) else {
                throw MFAError.signInSuperseded
            }
            s.collected = true
            // Spent in the session's own write (`SessionClaim`): a kill between them loses nothing.
            do {
                return try await signIn.finishSecondFactor(
                    accountID: user,
                    method: .authCode,
                    origin: origin,
                    passwordless: true,
                    claim: .authCode(hash: hash, state: try JSONEncoder().encode(s), expected: version)
                )
            } catch is SessionClaimLost {
                continue
            }
        }
        throw RequestError.serverBusy
    }

    /// The authenticator side: claim (no `userId`), approve (with it) or deny a code.
    public func authCode(
        _ auth: DeviceAuthenticated,
        _ request: AuthCodeClaim,
        action: AuthCodeAction
    ) async throws -> AuthenticationObject {
        guard auth.device.kind == DeviceRecord.authenticator else { throw MFAError.notAnAuthenticator }
        guard
            let text = HumanCode.extract(
                request.code,
                queryItem: "authentication_code",
                length: AuthenticationCode.length
            )
        else {
            throw MFAError.authCodeInvalid
        }
        let hash = PairingKey.hash(text)
        let now = clock.now()
        for _ in 0..<8 {
            guard let row = try await authCodeStore.authCode(hash: hash) else { throw MFAError.authCodeInvalid }
            var s = try JSONDecoder().decode(StoredCode.self, from: row.state)
            do {
                switch action {
                case .claim: _ = try s.code.claim(device: auth.device.id, users: [auth.account.id], now: now)
                case .approve:
                    guard let user = request.userId else {
                        throw RequestError.invalidField(field: "userId", reason: "the user to sign in, from the claim")
                    }
                    _ = try s.code.approve(device: auth.device.id, user: user, now: now)
                case .deny: _ = try s.code.deny(device: auth.device.id, now: now)
                }
            } catch is AuthenticationCode.Refusal {
                throw MFAError.authCodeInvalid
            }
            guard
                try await authCodeStore.updateAuthCode(
                    hash: hash,
                    state: try JSONEncoder().encode(s),
                    expected: row.version
                )
            else { continue }
            // The waiting screen's long poll looks.
            publish(.authCode(hash: hash))
            let users = try await s.code.users.asyncMap { id in try await accounts.account(id: id) }.compactMap {
                $0
            }
            try await audit.record(
                auth.account.id,
                .authCode,
                .authenticationCode(action, s.code.status),
                RequestOrigin(address: "", userAgent: "authenticator \(auth.device.id)")
            )
            return AuthenticationObject(
                status: s.code.status(at: now).rawValue,
                users: users.map { .init(userId: $0.id, username: $0.username, given: $0.name, family: $0.lastname) },
                userApproval: s.code.approval.rawValue,
                clientContext: ClientContext(
                    address: s.context.address,
                    userAgent: s.context.userAgent,
                    time: Date(timeIntervalSince1970: TimeInterval(s.context.time))
                )
            )
        }
        throw RequestError.serverBusy
    }

    public enum AuthCodeAction: String, Sendable { case claim, approve, deny }
}

extension Array {
    func asyncMap<U>(_ transform: (Element) async throws -> U) async rethrows -> [U] {
        var out: [U] = []
        out.reserveCapacity(count)
        for e in self { out.append(try await transform(e)) }
        return out
    }
}
