import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import Logging

/// Devices: registration with proof of possession, device sessions opened by signing a nonce, rename,
/// revoke, key rotation, and the public key directory (docs/DESIGN.md, "Devices"). Clock and randomness
/// are injected; nothing here knows about HTTP.
public final class DeviceService: Sendable {
    let store: any DeviceStore
    let accounts: AccountService
    let sessions: SessionService
    let signIn: SignInService
    let audit: AuditLog
    let config: ServerConfiguration
    let clock: any WallClock
    let random: any RandomSource
    let nonces: AddressThrottle
    /// Registration challenges per account and rotations per device: each writes a row (a challenge, a
    /// key-history entry that every sender then downloads), so neither may be asked for without bound.
    let registrationChallenges = AddressThrottle(.init(capacity: 20, window: 600))
    let rotations = AddressThrottle(.init(capacity: 10, window: 86_400))
    /// Revocations by token per address: each is a guess at a 256-bit token, so this only bounds the work.
    let selfRevocations = AddressThrottle(.init(capacity: 10, window: 600))
    /// Key-gate events per account: the audit log is not a place to write freely.
    let gateEventsPerAccount = AddressThrottle(.init(capacity: 120, window: 3600))

    public init(
        store: any DeviceStore,
        accounts: AccountService,
        sessions: SessionService,
        signIn: SignInService,
        audit: AuditLog,
        config: ServerConfiguration,
        clock: any WallClock,
        random: any RandomSource
    ) {
        self.store = store
        self.accounts = accounts
        self.sessions = sessions
        self.signIn = signIn
        self.audit = audit
        self.config = config
        self.clock = clock
        self.random = random
        nonces = AddressThrottle(config.deviceNoncesPerAddress)
    }

    static let registerKind = "register", sessionKind = "session"

    private func challenge(kind: String, subject: String) async throws -> DeviceChallenge {
        let nonce = SingleUseNonce(random: random, now: clock.now(), lifetime: config.challengeLifetime)
        try await store.createChallenge(
            hash: nonce.hash,
            kind: kind,
            subject: subject,
            expiresAt: nonce.challenge.expiresAt
        )
        return nonce.challenge
    }

    private func spend(_ challenge: Base64URL, kind: String, subject: String) async throws {
        guard let hash = SingleUseNonce.storedHash(of: challenge),
            try await store.spendChallenge(hash: hash, kind: kind, subject: subject, now: clock.now())
        else { throw DeviceError.challengeInvalid }
    }

    // MARK: Registration

    public func registrationChallenge(_ auth: Authenticated) async throws -> DeviceChallenge {
        if let wait = registrationChallenges.take("account " + auth.account.id, now: clock.now()) {
            throw RequestError.rateLimited(retryAfter: wait)
        }
        return try await challenge(kind: Self.registerKind, subject: auth.account.id)
    }

    static func publicKey(_ field: String, _ value: Base64URL) throws -> PublicKey {
        do {
            return try PublicKey(spki: value.bytes)
        } catch {
            throw RequestError.invalidField(
                field: field,
                reason: "a P-256 public key as SPKI DER in unpadded base64url (\(error))"
            )
        }
    }

    public func register(
        _ auth: Authenticated,
        _ request: DeviceRegistrationRequest,
        origin: RequestOrigin
    ) async throws -> DeviceRecord {
        try sessions.requireRecentAuthentication(auth)
        let name = try DeviceName(parsing: request.name).text
        let signing = try Self.publicKey("signingKey", request.signingKey)
        let encryption = try Self.publicKey("encryptionKey", request.encryptionKey)
        // Spent before the signature is checked: a challenge buys one attempt, right or wrong.
        try await spend(request.challenge, kind: Self.registerKind, subject: auth.account.id)
        let message = DeviceProof.registrationMessage(
            challenge: request.challenge.bytes,
            accountID: auth.account.id,
            signingKey: signing,
            encryptionKey: encryption
        )
        guard signing.isValidSignature(request.signature.bytes, for: message) else {
            try await audit.record(auth.account.id, .deviceRegister, .badSignature, origin)
            throw DeviceError.badSignature(
                "the signature does not verify with signingKey over the registration message (docs/PROTOCOL.md §1)"
            )
        }
        let now = clock.now()
        let device = DeviceRecord(
            id: accounts.newID(),
            accountID: auth.account.id,
            name: name,
            signingKey: signing.spkiDER,
            signingKeyID: Hex.encode(signing.fingerprint.bytes),
            encryptionKey: encryption.spkiDER,
            encryptionKeyID: Hex.encode(encryption.fingerprint.bytes),
            createdAt: now,
            keysSince: now,
            lastSeenAt: nil,
            revokedAt: nil
        )
        switch try await store.addDevice(
            device,
            proof: KeySelfProof(challenge: request.challenge.bytes, signature: request.signature.bytes),
            maxActive: config.maxDevicesPerAccount
        ) {
        case .done: break
        case .limitReached: throw DeviceError.deviceLimit(config.maxDevicesPerAccount)
        case .keyInUse:
            throw DeviceError.keyInUse(
                "a key of this device is already registered; make new keys (countersign device init)"
            )
        case .notFound, .changed, .alreadyVouched, .unchanged: throw RequestError.unauthenticated
        }
        try await audit.record(auth.account.id, .deviceRegister, .success, origin)
        return device
    }

    /// An authenticator's device row (docs/PROTOCOL.md §3), to be stored with its pairing
    /// (`PairingStore.pair`): the pairing key already proved the account.
    func authenticatorRecord(
        id: String,
        accountID: String,
        name: String,
        signing: PublicKey,
        encryption: PublicKey,
        at now: Date
    ) -> DeviceRecord {
        DeviceRecord(
            id: id,
            accountID: accountID,
            name: name,
            signingKey: signing.spkiDER,
            signingKeyID: Hex.encode(signing.fingerprint.bytes),
            encryptionKey: encryption.spkiDER,
            encryptionKeyID: Hex.encode(encryption.fingerprint.bytes),
            createdAt: now,
            keysSince: now,
            lastSeenAt: nil,
            revokedAt: nil,
            kind: DeviceRecord.authenticator
        )
    }

    // MARK: Device sessions

    public func sessionChallenge(deviceID: String, origin: RequestOrigin) async throws -> DeviceChallenge {
        if let wait = nonces.take(origin.address, now: clock.now()) { throw RequestError.rateLimited(retryAfter: wait) }
        guard deviceID.utf8.count <= 64 else {
            throw RequestError.invalidField(field: "deviceId", reason: "a device ID from POST /v1/devices")
        }
        // Issued for any ID: whether a device exists is only learnt by proving its key.
        return try await challenge(kind: Self.sessionKind, subject: deviceID)
    }

    public func openSession(
        _ request: DeviceSessionRequest,
        origin: RequestOrigin
    ) async throws -> (String, DeviceSessionRecord, DeviceRecord, AccountRecord) {
        try await spend(request.nonce, kind: Self.sessionKind, subject: request.deviceId)
        // One answer for "no such device" and "wrong key", and the revocation told only to the key's
        // holder: the endpoint is anonymous, so it must not say which device IDs exist.
        let refused = DeviceError.badSignature(
            "the signature does not verify with the signing key of a device with this ID (docs/PROTOCOL.md §1)"
        )
        guard let device = try await store.device(id: request.deviceId),
            let key = try? PublicKey(spki: device.signingKey),
            key.isValidSignature(
                request.signature.bytes,
                for: DeviceProof.sessionMessage(nonce: request.nonce.bytes, deviceID: device.id)
            ),
            let account = try await accounts.account(id: device.accountID)
        else { throw refused }
        guard device.isActive else { throw DeviceError.revoked }
        // Checked again after the insert below, against a lock in flight; this one spares the write.
        try await signIn.requireUnlocked(username: account.username)
        let now = clock.now()
        let token = sessions.newDeviceSessionToken()
        let session = sessions.deviceSessionRecord(token: token, device: device, at: now)
        try await sessions.storeDeviceSession(session)
        // A rotation or revocation that committed between the read above and the insert ended every other
        // session, but not this one, proven with the old key: read again, and drop it.
        guard let current = try await store.device(id: device.id), current.isActive,
            current.signingKeyID == device.signingKeyID
        else {
            try await sessions.dropDeviceSession(session)
            throw refused
        }
        // The same for a lock: it ended the account's device sessions, and its devices open none until an
        // administrator unlocks (a key registered with a stolen session must not outlive the lock).
        do {
            try await signIn.requireUnlocked(username: account.username)
        } catch {
            try await sessions.dropDeviceSession(session)
            throw error
        }
        try await store.touchDevice(id: device.id, at: now)
        try await audit.record(account.id, .deviceSession, .success, origin)
        return (token, session, device, account)
    }

    // MARK: Managing devices

    public func list(_ auth: Authenticated) async throws -> [DeviceRecord] {
        try await store.devices(accountID: auth.account.id, includeRevoked: true)
    }

    public func rename(
        _ auth: Authenticated,
        deviceID: String,
        name raw: String,
        origin: RequestOrigin
    ) async throws -> DeviceRecord {
        let name = try DeviceName(parsing: raw).text
        guard try await store.rename(deviceID: deviceID, accountID: auth.account.id, name: name) == .done,
            let device = try await store.device(id: deviceID)
        else { throw DeviceError.notFound }
        try await audit.record(auth.account.id, .deviceRename, .success, origin)
        return device
    }

    public func revoke(_ auth: Authenticated, deviceID: String, origin: RequestOrigin) async throws {
        // Revoking an authenticator unpairs it: a change to the second factors.
        let target = try await store.device(id: deviceID)
        try sessions.requireRecentAuthentication(
            auth,
            secondFactorChange: target?.accountID == auth.account.id && target?.kind == DeviceRecord.authenticator
        )
        guard try await store.revoke(deviceID: deviceID, accountID: auth.account.id, at: clock.now()) == .done else {
            throw DeviceError.notFound
        }
        sessions.ended(.device(deviceID))
        try await audit.record(auth.account.id, .deviceRevoke, .success, origin)
    }

    /// Keeps the proof a device registered before servers kept proofs gives for its current keys
    /// (docs/PROTOCOL.md §1.3): the registration message over 32 bytes of its choosing, signed by its current
    /// signing key. A key that has a proof keeps it.
    public func proveKeys(_ auth: DeviceAuthenticated, _ request: KeyProofRequest, origin: RequestOrigin) async throws {
        guard request.challenge.bytes.count == 32 else {
            throw RequestError.invalidField(field: "challenge", reason: "32 random bytes in unpadded base64url")
        }
        let signing = try PublicKey(spki: auth.device.signingKey)
        let message = DeviceProof.registrationMessage(
            challenge: request.challenge.bytes,
            accountID: auth.account.id,
            signingKey: signing,
            encryptionKey: try PublicKey(spki: auth.device.encryptionKey)
        )
        guard signing.isValidSignature(request.signature.bytes, for: message) else {
            throw DeviceError.badSignature(
                "the signature does not verify with the device's current signing key over the registration message "
                    + "for its current keys (docs/PROTOCOL.md §1.3)"
            )
        }
        switch try await store.setKeyProof(
            deviceID: auth.device.id,
            signingKeyID: auth.device.signingKeyID,
            proof: KeySelfProof(challenge: request.challenge.bytes, signature: request.signature.bytes)
        ) {
        case .done: try await audit.record(auth.account.id, .deviceKeyProof, .success, origin)
        case .unchanged: return
        // The session's device is active: its key changed meanwhile (a rotation, which carries its own proof).
        default: throw DeviceError.keyInUse("this device's keys changed meanwhile; open a new device session")
        }
    }

    public func rotate(
        _ auth: DeviceAuthenticated,
        _ request: KeyRotationRequest,
        origin: RequestOrigin
    ) async throws -> DeviceRecord {
        if let wait = rotations.take("device " + auth.device.id, now: clock.now()) {
            throw RequestError.rateLimited(retryAfter: wait)
        }
        let old = try PublicKey(spki: auth.device.signingKey)
        let signing = try Self.publicKey("signingKey", request.signingKey)
        let encryption = try Self.publicKey("encryptionKey", request.encryptionKey)
        let message = DeviceProof.rotationMessage(
            deviceID: auth.device.id,
            oldSigningKey: old,
            newSigningKey: signing,
            newEncryptionKey: encryption
        )
        guard old.isValidSignature(request.oldKeySignature.bytes, for: message) else {
            throw DeviceError.badSignature("oldKeySignature does not verify with the device's current signing key")
        }
        guard signing.isValidSignature(request.newKeySignature.bytes, for: message) else {
            throw DeviceError.badSignature("newKeySignature does not verify with the new signing key")
        }
        let now = clock.now()
        switch try await store.rotate(
            deviceID: auth.device.id,
            expectedSigningKeyID: auth.device.signingKeyID,
            signingKey: signing.spkiDER,
            signingKeyID: Hex.encode(signing.fingerprint.bytes),
            encryptionKey: encryption.spkiDER,
            encryptionKeyID: Hex.encode(encryption.fingerprint.bytes),
            oldKeySignature: request.oldKeySignature.bytes,
            newKeySignature: request.newKeySignature.bytes,
            at: now
        ) {
        case .done: break
        case .keyInUse: throw DeviceError.keyInUse("a new key is already registered; make fresh keys")
        case .changed:
            throw DeviceError.keyInUse(
                "this device's keys were rotated meanwhile by another request; open a new device session"
            )
        case .notFound, .limitReached, .alreadyVouched, .unchanged: throw DeviceError.revoked
        }
        try await sessions.endOtherSessions(of: auth)
        try await audit.record(auth.account.id, .deviceRotate, .success, origin)
        guard let device = try await store.device(id: auth.device.id) else { throw DeviceError.notFound }
        return device
    }

    /// How far a vouch's signed time may be from the server's clock.
    static let vouchSkew: TimeInterval = 300

    /// Links a new device of the account: `auth`'s device vouches for it (docs/PROTOCOL.md §1).
    public func vouch(
        _ auth: DeviceAuthenticated,
        deviceID: String,
        _ request: DeviceVouchRequest,
        origin: RequestOrigin
    ) async throws -> (DeviceRecord, KeyVouch) {
        guard deviceID != auth.device.id else {
            throw RequestError.invalidField(
                field: "id",
                reason: "a device cannot approve itself: approve it from another device of the account"
            )
        }
        try checkSignedTime(request.vouchedAt, field: "vouchedAt")
        // An authenticator approves only once a messaging device endorsed its current key.
        if auth.device.kind != DeviceRecord.messaging {
            guard try await approvers(account: auth.account).contains(where: { $0.0.id == auth.device.id })
            else { throw DeviceError.notAnApprover }
        }
        let target = try await approvalTarget(
            deviceID,
            kind: DeviceRecord.messaging,
            of: auth,
            signingKeyID: request.signingKeyId,
            newer:
                "a device is approved by one of the account's devices added before it; approve it from an older device",
            changed: "the new device's keys changed since you looked; list the devices again and compare the new code"
        )
        let message = DeviceProof.vouchMessage(
            username: auth.account.username,
            voucherDeviceID: auth.device.id,
            voucherSigningKey: try PublicKey(spki: auth.device.signingKey),
            deviceID: target.id,
            signingKey: try PublicKey(spki: target.signingKey),
            encryptionKey: try PublicKey(spki: target.encryptionKey),
            vouchedAt: request.vouchedAt
        )
        guard try PublicKey(spki: auth.device.signingKey).isValidSignature(request.signature.bytes, for: message)
        else {
            try await audit.record(auth.account.id, .deviceVouch, .badSignature, origin)
            throw DeviceError.badSignature(
                "the signature does not verify with this device's signing key over the vouch message (docs/PROTOCOL.md §1)"
            )
        }
        let vouch = KeyVouch(deviceID: auth.device.id, vouchedAt: request.vouchedAt, signature: request.signature.bytes)
        switch try await store.vouch(
            deviceID: target.id,
            accountID: auth.account.id,
            kind: DeviceRecord.messaging,
            signingKeyID: request.signingKeyId,
            vouch: vouch,
            voucherSigningKeyID: auth.device.signingKeyID
        ) {
        case .done: break
        case .alreadyVouched: throw DeviceError.alreadyVouched
        case .changed:
            throw DeviceError.keyInUse(
                "the new device's keys changed since you looked; list the devices again and compare the new code"
            )
        case .notFound, .limitReached, .keyInUse, .unchanged: throw DeviceError.notFound
        }
        try await audit.record(auth.account.id, .deviceVouch, .success, origin)
        return (target, vouch)
    }

    /// Endorses an authenticator of the account as an approver of new devices: `auth`'s messaging device
    /// signs the endorsement over the authenticator's current key (docs/PROTOCOL.md §1.2).
    public func endorse(
        _ auth: DeviceAuthenticated,
        deviceID: String,
        _ request: ApproverEndorsementRequest,
        origin: RequestOrigin
    ) async throws -> (DeviceRecord, KeyVouch) {
        try checkSignedTime(request.endorsedAt, field: "endorsedAt")
        let target = try await approvalTarget(
            deviceID,
            kind: DeviceRecord.authenticator,
            of: auth,
            signingKeyID: request.signingKeyId,
            newer:
                "an authenticator is endorsed by one of the account's devices added before it; endorse it from an older device",
            changed: "the authenticator's key changed since you looked; list the devices again and compare the new code"
        )
        // Endorsed once while that endorsement holds; again after its endorser re-keyed or went.
        guard try await !approvers(account: auth.account).contains(where: { $0.0.id == target.id }) else {
            throw DeviceError.alreadyVouched
        }
        let message = DeviceProof.endorsementMessage(
            username: auth.account.username,
            endorserDeviceID: auth.device.id,
            endorserSigningKey: try PublicKey(spki: auth.device.signingKey),
            approverDeviceID: target.id,
            approverSigningKey: try PublicKey(spki: target.signingKey),
            endorsedAt: request.endorsedAt
        )
        guard try PublicKey(spki: auth.device.signingKey).isValidSignature(request.signature.bytes, for: message)
        else {
            try await audit.record(auth.account.id, .approverEndorse, .badSignature, origin)
            throw DeviceError.badSignature(
                "the signature does not verify with this device's signing key over the endorsement message (docs/PROTOCOL.md §1.2)"
            )
        }
        let endorsement = KeyVouch(
            deviceID: auth.device.id,
            vouchedAt: request.endorsedAt,
            signature: request.signature.bytes
        )
        switch try await store.vouch(
            deviceID: target.id,
            accountID: auth.account.id,
            kind: DeviceRecord.authenticator,
            signingKeyID: request.signingKeyId,
            vouch: endorsement,
            voucherSigningKeyID: auth.device.signingKeyID
        ) {
        case .done: break
        case .alreadyVouched: throw DeviceError.alreadyVouched
        case .changed:
            throw DeviceError.keyInUse(
                "the authenticator's key changed since you looked; list the devices again and compare the new code"
            )
        case .notFound, .limitReached, .keyInUse, .unchanged: throw DeviceError.notFound
        }
        try await audit.record(auth.account.id, .approverEndorse, .success, origin)
        return (target, endorsement)
    }

    /// The device `deviceID` that `auth`'s device vouches for or endorses: the account's, active, of `kind`
    /// (else 404), added after `auth`'s device (only an older device approves a newer one: a device registered
    /// with a stolen password after it cannot approve it first), and still with the signing key `signingKeyID`.
    private func approvalTarget(
        _ deviceID: String,
        kind: String,
        of auth: DeviceAuthenticated,
        signingKeyID: String,
        newer: String,
        changed: String
    ) async throws -> DeviceRecord {
        guard let target = try await store.device(id: deviceID), target.accountID == auth.account.id,
            target.isActive, target.kind == kind
        else { throw DeviceError.notFound }
        guard auth.device.createdAt < target.createdAt else {
            throw RequestError.invalidField(field: "id", reason: newer)
        }
        guard target.signingKeyID == signingKeyID else { throw DeviceError.keyInUse(changed) }
        return target
    }

    /// A signed time (whole seconds since 1970) within `vouchSkew` of the server's clock.
    private func checkSignedTime(_ seconds: Int64, field: String) throws {
        guard abs(TimeInterval(seconds) - clock.now().timeIntervalSince1970) <= Self.vouchSkew else {
            throw RequestError.invalidField(
                field: field,
                reason:
                    "the time signed, in whole seconds since 1970, within 5 minutes of the server's clock; check this device's clock"
            )
        }
    }

    /// The account's approvers (docs/PROTOCOL.md §1.2): its authenticators whose endorsement verifies under
    /// the current key of the messaging device that made it, still active. One whose endorser re-keyed or went
    /// is no approver (contacts could not check it either) until a device endorses it again.
    public func approvers(account: AccountRecord) async throws -> [(DeviceRecord, KeyVouch)] {
        var out: [(DeviceRecord, KeyVouch)] = []
        for (approver, endorsement) in try await store.approvers(accountID: account.id) {
            guard let endorser = try await store.device(id: endorsement.deviceID),
                endorser.accountID == account.id, endorser.isActive, endorser.kind == DeviceRecord.messaging,
                let endorserKey = try? PublicKey(spki: endorser.signingKey),
                let approverKey = try? PublicKey(spki: approver.signingKey),
                endorserKey.isValidSignature(
                    endorsement.signature,
                    for: DeviceProof.endorsementMessage(
                        username: account.username,
                        endorserDeviceID: endorser.id,
                        endorserSigningKey: endorserKey,
                        approverDeviceID: approver.id,
                        approverSigningKey: approverKey,
                        endorsedAt: endorsement.vouchedAt
                    )
                )
            else { continue }
            out.append((approver, endorsement))
        }
        return out
    }

    /// Each device's vouch, if any of its keys has one.
    public func vouches(accountID: String) async throws -> [String: KeyVouch] {
        var out: [String: KeyVouch] = [:]
        for entry in try await store.keyHistory(accountID: accountID) {
            if let v = entry.vouch, out[entry.deviceID] == nil { out[entry.deviceID] = v }
        }
        return out
    }

    /// Revokes an authenticator's device for the MFA feature (unpairing, MFA turned off): false when it
    /// was not the account's active device.
    func revokeAuthenticator(deviceID: String, accountID: String) async throws -> Bool {
        guard try await store.revoke(deviceID: deviceID, accountID: accountID, at: clock.now()) == .done else {
            return false
        }
        sessions.ended(.device(deviceID))
        return true
    }

    /// The device with this ID, revoked or not (nil: none).
    func device(id: String) async throws -> DeviceRecord? { try await store.device(id: id) }

    // MARK: Directory

    public func directory(username raw: String) async throws -> (AccountRecord, [DeviceRecord], [KeyHistoryRecord]) {
        guard let username = (try? Username(parsing: raw))?.text,
            let account = try await accounts.account(username: username)
        else {
            throw DeviceError.notFound
        }
        let active = try await store.devices(accountID: account.id, includeRevoked: false).filter {
            $0.kind == DeviceRecord.messaging
        }
        return (account, active, try await store.keyHistory(accountID: account.id))
    }
}
