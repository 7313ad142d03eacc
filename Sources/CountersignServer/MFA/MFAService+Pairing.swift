import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import Logging

/// Pairing an authenticator: the pairing key the account shows, and the device that presents it.
extension MFAService {

    public func pairingKey(_ auth: Authenticated, server: String) async throws -> PairingKeyResponse {
        try sessions.requireRecentAuthentication(auth, secondFactorChange: true)
        let now = clock.now()
        let (text, record) = PairingKey.make(accountID: auth.account.id, now: now, random: random)
        guard
            try await pairingStore.createPairingKey(
                hash: record.hash,
                accountID: auth.account.id,
                expiresAt: record.expiresAt,
                maxOpen: PairingKey.maxOpenPerAccount,
                now: now
            )
        else {
            throw MFAError.tooManyPairingKeys
        }
        try await audit.record(auth.account.id, .mfaPairingKey, .created, origin(auth))
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
        guard let key = PairingKey.parse(request.pairingKey) ?? PairingKey.parseGrant(request.pairingKey) else {
            throw MFAError.pairingKeyInvalid
        }
        let keyHash = PairingKey.hash(key)
        guard
            signing.isValidSignature(
                request.signature.bytes,
                for: DeviceProof.pairingMessage(pairingKey: key, signingKey: signing, encryptionKey: encryption)
            )
        else {
            // Spent all the same, and one answer for wrong, used and expired keys.
            guard let accountID = try await pairingStore.spendPairingKey(hash: keyHash, now: now) else {
                throw MFAError.pairingKeyInvalid
            }
            try await audit.record(accountID, .mfaPair, .badSignature, origin)
            throw MFAError.badSignature(
                "the signature does not verify with signingKey over the pairing message (docs/PROTOCOL.md §3)"
            )
        }
        // The key is spent, and the device, its authenticator record and its session stored, in one write.
        let devices = devices
        let deviceID = accounts.newID()
        let secret = random.bytes(20)
        let sealedSecret = try box.seal(secret, for: deviceID)
        let sessions = sessions
        let token = sessions.newDeviceSessionToken()
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
                session: sessions.deviceSessionRecord(token: token, device: device, at: now)
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
        switch try await pairingStore.pair(
            keyHash: keyHash,
            signingKeyHash: PairingKey.boundKey(signing),
            now: now,
            maxDevices: config.maxDevicesPerAccount,
            records
        ) {
        case .paired(let id): accountID = id
        case .keyInvalid, .refused(.notFound): throw MFAError.pairingKeyInvalid
        case .accountLocked: throw SignInRefusal.locked
        case .otherKey(let accountID):
            try? await audit.record(accountID, .mfaPair, .badSignature, origin)
            throw MFAError.badSignature(
                "this pairing grant is for another key: pair with the key the mobile payload named (docs/PROTOCOL.md §6.11)"
            )
        case .refused(.limitReached): throw MFAError.deviceLimit(config.maxDevicesPerAccount)
        case .refused(.keyInUse):
            throw MFAError.keyInUse("a key of this device is already registered; make new keys")
        case .refused(.done), .refused(.changed), .refused(.alreadyVouched), .refused(.unchanged):
            throw RequestError.unauthenticated
        }
        guard let account = try await accounts.account(id: accountID) else { throw MFAError.pairingKeyInvalid }
        let stored = try records(accountID)  // what the store wrote: `records` makes the same each time
        // The pairing is stored: an audit write that fails must not keep its answer from the authenticator.
        try? await audit.record(accountID, .mfaPair, .success, origin)
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
}

/// Pairing by OpenID Connect (docs/PROTOCOL.md §6.11): the grant an ID token carries, opened when the
/// authorization with a mobile payload is granted, and declined by the device it was for.
extension MFAService {
    /// Opens a pairing grant (`token`, made by the provider) for `accountID`, bound to a key (`keyHash`: base64url
    /// of SHA-256 of its SPKI DER); at most once per payload (`payloadHash`, remembered as long as a payload can
    /// live) and within the account's open pairing keys. Audited as a pairing key.
    func openPairingGrant(
        token: String,
        accountID: String,
        payloadHash: String,
        keyHash: String,
        origin: RequestOrigin
    ) async throws -> PairingGrantWrite {
        let now = clock.now()
        guard let key = Base64URL(text: keyHash), key.bytes.count == 32 else { return .tooMany }
        let opened = try await pairingStore.openPairingGrant(
            hash: PairingKey.hash(token),
            accountID: accountID,
            boundKey: Hex.encode(key.bytes),
            payloadHash: payloadHash,
            expiresAt: now.addingTimeInterval(PairingKey.lifetime),
            payloadExpiresAt: now.addingTimeInterval(MobilePayload.lifetime + 60),
            maxOpen: PairingKey.maxOpenPerAccount,
            now: now
        )
        if opened == .opened { try await audit.record(accountID, .mfaPairingKey, .created, origin) }
        return opened
    }

    /// Spends a pairing grant the provider opened and must take back (its OIDC grant was revoked meanwhile).
    func spendPairingGrant(_ token: String) async throws {
        _ = try await pairingStore.spendPairingKey(hash: PairingKey.hash(token), now: clock.now())
    }

    /// PingOne's `PairingObject.deny()`: the grant (or key) is spent, whoever sends it; the same answer
    /// whether or not it was open, so it tells nothing.
    public func refusePairing(_ refusal: PairingRefusal, origin: RequestOrigin) async throws {
        if let wait = pairingAttempts.take(origin.address, now: clock.now()) {
            throw RequestError.rateLimited(retryAfter: wait)
        }
        guard let key = PairingKey.parse(refusal.pairingKey) ?? PairingKey.parseGrant(refusal.pairingKey),
            let accountID = try await pairingStore.spendPairingKey(hash: PairingKey.hash(key), now: clock.now())
        else { return }
        try await audit.record(accountID, .mfaPair, .declined, origin)
    }
}
