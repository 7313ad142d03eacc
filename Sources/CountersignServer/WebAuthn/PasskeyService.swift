import CountersignAPI
import Crypto
import Foundation

/// Passkeys (docs/PROTOCOL.md §5): starting and finishing ceremonies over the store, the rules of this
/// folder deciding. Clock and randomness are injected; nothing here knows about HTTP.
public final class PasskeyService: Sendable {
    let store: any PasskeyStore
    let accounts: AccountService
    let sessions: SessionService
    let signIn: SignInService
    let audit: AuditLog
    let rp: RelyingParty
    let clock: any WallClock
    let random: any RandomSource
    /// The MAC key of discoverable sign-in ceremonies (`SignInCeremony`), a server secret shared by nodes.
    let signInKey: SymmetricKey

    static let timeoutMs = 300_000
    /// ES256, then RS256 (SPEC §13.2: no EdDSA).
    static let algorithms = [Int(COSEAlgorithm.es256), Int(COSEAlgorithm.rs256)]
    static let maxNameLength = 64
    static let prfSaltLength = 32
    /// WebAuthn's bound on a credential ID.
    static let maxCredentialIDLength = 1023
    /// Discoverable sign-ins started per address (IPv6 per /64).
    let starts = AddressThrottle(.init(capacity: 30, window: 60))
    /// Ceremonies an account starts (registration, re-authentication, second factor) per minute.
    let accountStarts = AddressThrottle(.init(capacity: 30, window: 60))

    init(
        store: any PasskeyStore,
        accounts: AccountService,
        sessions: SessionService,
        signIn: SignInService,
        audit: AuditLog,
        rp: RelyingParty,
        clock: any WallClock,
        random: any RandomSource,
        signInKey: SymmetricKey
    ) {
        self.store = store
        self.accounts = accounts
        self.sessions = sessions
        self.signIn = signIn
        self.audit = audit
        self.rp = rp
        self.clock = clock
        self.random = random
        self.signInKey = signInKey
    }

    /// Options for `navigator.credentials.create`, for a session that authenticated recently (adding a
    /// way to sign in is a change to the account's factors).
    public func startRegistration(_ auth: Authenticated) async throws -> PasskeyRegistrationStart {
        try sessions.requireRecentAuthentication(auth, secondFactorChange: true)
        let account = auth.account
        try limitStarts(accountID: account.id)
        let handle = try await store.userHandle(accountID: account.id, candidate: random.bytes(16))
        let existing = try await store.passkeys(accountID: account.id)
        guard existing.count < PasskeyRules.maxPerAccount else { throw PasskeyError.tooManyPasskeys }
        var ceremony = PasskeyCeremony.make(
            kind: .registration,
            accountID: account.id,
            boundTo: auth.session.tokenHash,
            now: clock.now(),
            random: random
        )
        let prfSalt = random.bytes(Self.prfSaltLength)
        ceremony.prfSalt = prfSalt
        try await store.createCeremony(
            id: ceremony.id,
            state: try JSONEncoder().encode(ceremony),
            expiresAt: ceremony.expiresAt
        )
        return PasskeyRegistrationStart(
            ceremonyId: ceremony.id,
            publicKey: PasskeyCreationOptions(
                rpID: rp.id,
                rpName: RelyingParty.name,
                user: .init(
                    id: Base64URL(handle),
                    name: account.username,
                    displayName: "\(account.name) \(account.lastname)"
                ),
                challenge: Base64URL(ceremony.challenge),
                algorithms: Self.algorithms,
                timeoutMs: Self.timeoutMs,
                exclude: existing.map { .init(id: Base64URL($0.credentialID), transports: $0.transports) }
            )
        )
    }

    /// Checks the browser's answer to `finish.ceremonyId` (spent whatever the outcome) and stores the
    /// passkey under the name given. The ceremony is spent in the transaction that stores the passkey, so
    /// a process killed in between leaves both as they were: the same answer can be sent again.
    public func finishRegistration(
        _ auth: Authenticated,
        _ finish: PasskeyRegistrationFinish,
        origin: RequestOrigin
    ) async throws
        -> PasskeySummary
    {
        try sessions.requireRecentAuthentication(auth, secondFactorChange: true)
        try PasskeyRules.refuseSecrets(finish.credential.clientExtensionResults)
        let name = try Self.validName(finish.name)
        let now = clock.now()
        guard finish.ceremonyId.utf8.count <= 64, !finish.ceremonyId.hasPrefix(SignInCeremony.prefix),
            let state = try await store.ceremony(id: finish.ceremonyId, now: now)
        else { throw PasskeyError.ceremonyNotFound }
        do {
            return try await finishRegistration(auth, finish, name: name, state: state, now: now, origin: origin)
        } catch {
            // Refused (or failed) before the passkey's transaction spent it: spent now, so that no answer
            // is judged after it. A failure to spend it answers instead of the refusal.
            _ = try await store.takeCeremony(id: finish.ceremonyId, now: now)
            throw error
        }
    }

    private func finishRegistration(
        _ auth: Authenticated,
        _ finish: PasskeyRegistrationFinish,
        name: String,
        state: Data,
        now: Date,
        origin: RequestOrigin
    ) async throws -> PasskeySummary {
        guard let ceremony = try? JSONDecoder().decode(PasskeyCeremony.self, from: state) else {
            throw PasskeyError.ceremonyNotFound
        }
        let c = finish.credential
        guard c.type == "public-key", c.id == c.rawId.text else {
            throw PasskeyError.data(.malformed("the credential's type must be public-key and its id its rawId"))
        }
        let existing = try await store.passkeys(accountID: auth.account.id).count
        let v: PasskeyRules.NewPasskey
        do {
            v = try PasskeyRules.verifyRegistration(
                .init(
                    rawID: c.rawId.bytes,
                    clientDataJSON: c.response.clientDataJSON.bytes,
                    attestationObject: c.response.attestationObject.bytes,
                    transports: c.response.transports ?? []
                ),
                ceremony: ceremony,
                accountID: auth.account.id,
                boundTo: auth.session.tokenHash,
                existingCount: existing,
                rp: rp,
                now: now
            )
        } catch {
            // Concurrent answers to one ceremony may all be checked; only the one that spends it is judged
            // (and audited), the others find it gone.
            guard try await store.takeCeremony(id: finish.ceremonyId, now: now) != nil else {
                throw PasskeyError.ceremonyNotFound
            }
            try await audit.record(auth.account.id, .passkey, .refused, origin)
            throw error
        }
        let passkey = v.stored(
            id: PasskeyRules.newID(random.bytes(16)),
            accountID: auth.account.id,
            name: name,
            prfSalt: ceremony.prfSalt ?? random.bytes(Self.prfSaltLength),
            at: now
        )
        let spending = (id: finish.ceremonyId, now: clock.now())
        switch try await store.addPasskey(
            passkey,
            max: PasskeyRules.maxPerAccount,
            spending: spending,
            audit: audit.entry(auth.account.id, .passkey, .created, origin)
        ) {
        case .added:
            return Self.summary(passkey)
        case .credentialTaken:
            try await audit.record(auth.account.id, .passkey, .refused, origin)
            throw PasskeyError.credentialTaken
        case .tooMany: throw PasskeyError.tooManyPasskeys
        case .accountNotFound, .ceremonyGone: throw PasskeyError.ceremonyNotFound
        }
    }

    func limitStarts(accountID: String) throws {
        if let wait = accountStarts.take("account " + accountID, now: clock.now()) {
            throw RequestError.rateLimited(retryAfter: wait)
        }
    }

    public func list(_ auth: Authenticated) async throws -> [PasskeySummary] {
        var out: [PasskeySummary] = []
        for var p in try await store.passkeys(accountID: auth.account.id) {
            if p.prfSalt.count != Self.prfSaltLength {
                p.prfSalt = try await store.setPRFSaltIfMissing(id: p.id, salt: random.bytes(Self.prfSaltLength))
            }
            out.append(Self.summary(p))
        }
        return out
    }

    static func summary(_ p: StoredPasskey) -> PasskeySummary {
        PasskeySummary(
            id: p.id,
            credentialId: Base64URL(p.credentialID),
            name: p.name,
            createdAt: p.createdAt,
            lastUsedAt: p.lastUsedAt,
            synced: p.backupEligible,
            backedUp: p.backedUp,
            aaguid: UUID(uuid: uuid(p.aaguid)).uuidString.lowercased(),
            prfSalt: Base64URL(p.prfSalt)
        )
    }

    private static func uuid(_ b: [UInt8]) -> uuid_t {
        let x = b.count == 16 ? b : [UInt8](repeating: 0, count: 16)
        return (x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8], x[9], x[10], x[11], x[12], x[13], x[14], x[15])
    }

    /// 1 to 64 characters, every one showable (`ShownName`); surrounding spaces dropped.
    static func validName(_ raw: String) throws -> String {
        let name = raw.trimmingCharacters(in: .whitespaces)
        guard (1...maxNameLength).contains(name.count), ShownName.isShowable(name)
        else { throw PasskeyError.invalidName }
        return name
    }
}

/// The COSE algorithm numbers the options list.
enum COSEAlgorithm {
    static let es256 = -7
    static let rs256 = -257
}
