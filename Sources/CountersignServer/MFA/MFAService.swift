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
    // The narrow stores the service uses (one storage gives them all: `MFAStore`).
    let stateStore: any MFAStateStore
    let authenticatorStore: any AuthenticatorStore
    let pairingStore: any PairingStore
    let transactionStore: any MFATransactionStore
    let recoveryCodeStore: any RecoveryCodeStore
    let authCodeStore: any AuthenticationCodeStore
    /// Whether an account has passkeys, to offer one as the second factor.
    let passkeys: any PasskeyStore
    let accounts: AccountService
    let devices: DeviceService
    let sessions: SessionService
    let signIn: SignInService
    let audit: AuditLog
    let config: ServerConfiguration
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
    /// Tells these authenticators of a new challenge while nothing of them is connected (their push
    /// targets, docs/PROTOCOL.md §2.2), from this node only.
    let notify: @Sendable (_ devices: [String], _ transactionID: String, _ expiresAt: Date) -> Void
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
        sessions: SessionService,
        signIn: SignInService,
        audit: AuditLog,
        config: ServerConfiguration,
        clock: any WallClock,
        random: any RandomSource,
        notify: @escaping @Sendable (_ devices: [String], _ transactionID: String, _ expiresAt: Date) -> Void = {
            _,
            _,
            _ in
        },
        publish: @escaping @Sendable (PushSignal) -> Void
    ) async throws {
        stateStore = store
        authenticatorStore = store
        pairingStore = store
        transactionStore = store
        recoveryCodeStore = store
        authCodeStore = store
        self.passkeys = passkeys
        self.accounts = accounts
        self.devices = devices
        self.sessions = sessions
        self.signIn = signIn
        self.audit = audit
        self.config = config
        self.clock = clock
        self.random = random
        self.publish = publish
        self.notify = notify
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
        guard let (data, version) = try await stateStore.accountState(accountID) else { return (AccountState(), nil) }
        return (try JSONDecoder().decode(AccountState.self, from: data), version)
    }

    /// Applies `change` to the account's state by compare-and-set, retrying on a concurrent write.
    @discardableResult
    func update<T>(_ accountID: String, _ change: (inout AccountState) throws -> T) async throws -> T {
        for _ in 0..<8 {
            var (s, version) = try await state(accountID)
            let result = try change(&s)
            if try await stateStore.saveAccountState(accountID, state: try JSONEncoder().encode(s), expected: version) {
                return result
            }
        }
        throw RequestError.serverBusy
    }

    public func status(_ auth: Authenticated) async throws -> MFAStatus {
        let (s, _) = try await state(auth.account.id)
        let authenticators = try await authenticatorStore.authenticators(accountID: auth.account.id)
        var infos: [AuthenticatorInfo] = []
        for a in authenticators {
            let name = try await devices.device(id: a.deviceID)?.name ?? ""
            infos.append(
                AuthenticatorInfo(deviceId: a.deviceID, name: name, pairedAt: a.pairedAt, pushAllowed: a.pushAllowed)
            )
        }
        let codes = try await recoveryCodeStore.recoveryCodesLeft(accountID: auth.account.id)
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
        try sessions.requireRecentAuthentication(auth, secondFactorChange: true)
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
        try await audit.record(
            auth.account.id,
            .mfaSettings,
            .numberMatching(kind, digits: settings.numberDigits),
            origin(auth)
        )
        return try await status(auth)
    }

    func origin(_ auth: Authenticated) -> RequestOrigin {
        RequestOrigin(address: auth.session.address, userAgent: auth.session.userAgent)
    }
}

extension Optional {
    func asyncMap<U>(_ transform: (Wrapped) async throws -> U) async rethrows -> U? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}
