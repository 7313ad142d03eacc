import CountersignAPI
import CountersignCrypto
import Foundation

extension CountersignClient {
    /// Registers this installation as a device of the signed-in account (docs/PROTOCOL.md §1): fetches a
    /// challenge and signs it with `signing`. The account's re-authentication interval applies.
    public func registerDevice(name: String, signing: Identity, encryptionKey: PublicKey) async throws -> Device {
        let account = try await me()
        let challenge = try await send("POST", "/v1/devices/challenges", as: DeviceChallenge.self, credential: .account)
        let message = DeviceProof.registrationMessage(
            challenge: challenge.challenge.bytes,
            accountID: account.id,
            signingKey: signing.publicKey,
            encryptionKey: encryptionKey
        )
        let request = DeviceRegistrationRequest(
            name: name,
            signingKey: Base64URL(signing.publicKey.spkiDER),
            encryptionKey: Base64URL(encryptionKey.spkiDER),
            challenge: challenge.challenge,
            signature: Base64URL(try signing.signature(for: message))
        )
        return try await send("POST", "/v1/devices", body: request, as: Device.self, credential: .account)
    }

    /// Gives this device's current keys the key proof it was registered without (docs/PROTOCOL.md §1.3):
    /// the registration message over 32 random bytes, its account ID and its keys, signed by `signing`.
    /// Needs the device session.
    public func proveKeys(
        accountID: String,
        signing: Identity,
        encryptionKey: PublicKey,
        challenge: [UInt8] = (0..<32).map { _ in UInt8.random(in: 0...255) }
    ) async throws {
        let message = DeviceProof.registrationMessage(
            challenge: challenge,
            accountID: accountID,
            signingKey: signing.publicKey,
            encryptionKey: encryptionKey
        )
        let request = KeyProofRequest(
            challenge: Base64URL(challenge),
            signature: Base64URL(try signing.signature(for: message))
        )
        try await send("PUT", "/v1/devices/current/key-proof", body: request, credential: .device)
    }

    /// Opens a device session by signing a fresh nonce with the device's signing key; later message
    /// calls use it.
    @discardableResult
    public func openDeviceSession(deviceID: String, signing: Identity) async throws -> DeviceSession {
        _ = try Self.segment(deviceID)
        let nonce = try await send(
            "POST",
            "/v1/device-sessions/challenges",
            body: DeviceSessionChallengeRequest(deviceId: deviceID),
            as: DeviceChallenge.self
        )
        let signature = try signing.signature(
            for: DeviceProof.sessionMessage(nonce: nonce.challenge.bytes, deviceID: deviceID)
        )
        let session = try await send(
            "POST",
            "/v1/device-sessions",
            body: DeviceSessionRequest(deviceId: deviceID, nonce: nonce.challenge, signature: Base64URL(signature)),
            as: DeviceSession.self
        )
        deviceToken = session.token
        return session
    }

    public func closeDeviceSession() async throws {
        try await send("DELETE", "/v1/device-sessions/current", credential: .device)
        deviceToken = nil
    }

    /// The account's devices, revoked ones included.
    public func devices() async throws -> [Device] {
        try await send("GET", "/v1/devices", as: DeviceList.self, credential: .account).devices
    }

    public func renameDevice(id: String, to name: String) async throws -> Device {
        try await send(
            "PATCH",
            "/v1/devices/\(try Self.segment(id))",
            body: DeviceRenameRequest(name: name),
            as: Device.self,
            credential: .account
        )
    }

    /// Revokes a device: its sessions end, its queue is dropped, its keys stop receiving.
    public func revokeDevice(id: String) async throws {
        try await send("DELETE", "/v1/devices/\(try Self.segment(id))", credential: .account)
    }

    /// Replaces this device's keys: the old signing key vouches for the new ones, the new one proves
    /// possession. Keep the old private key to open messages sealed to it.
    public func rotateKeys(
        deviceID: String,
        old: Identity,
        newSigning: Identity,
        newEncryptionKey: PublicKey
    ) async throws -> Device {
        _ = try Self.segment(deviceID)
        let message = DeviceProof.rotationMessage(
            deviceID: deviceID,
            oldSigningKey: old.publicKey,
            newSigningKey: newSigning.publicKey,
            newEncryptionKey: newEncryptionKey
        )
        let request = KeyRotationRequest(
            signingKey: Base64URL(newSigning.publicKey.spkiDER),
            encryptionKey: Base64URL(newEncryptionKey.spkiDER),
            oldKeySignature: Base64URL(try old.signature(for: message)),
            newKeySignature: Base64URL(try newSigning.signature(for: message))
        )
        return try await send("POST", "/v1/devices/current/keys", body: request, as: Device.self, credential: .device)
    }

    /// Approves (links) a new device of this account (docs/PROTOCOL.md §1): this device, with `voucher` its
    /// current signing key, vouches for `device`'s keys as the directory listed them, at `now`. Compare
    /// `DeviceProof.linkCode` of those keys with the code the new device shows before calling this.
    public func vouchDevice(
        _ device: DirectoryDevice,
        username: String,
        voucherDeviceID: String,
        voucher: Identity,
        now: Date
    ) async throws -> Device {
        _ = try Self.segment(device.id)
        let vouchedAt = Int64(now.timeIntervalSince1970.rounded(.down))
        let message = DeviceProof.vouchMessage(
            username: username.lowercased(),
            voucherDeviceID: voucherDeviceID,
            voucherSigningKey: voucher.publicKey,
            deviceID: device.id,
            signingKey: try PublicKey(spki: device.signingKey.bytes),
            encryptionKey: try PublicKey(spki: device.encryptionKey.bytes),
            vouchedAt: vouchedAt
        )
        let request = DeviceVouchRequest(
            signingKeyId: Hex.encode(try PublicKey(spki: device.signingKey.bytes).fingerprint.bytes),
            vouchedAt: vouchedAt,
            signature: Base64URL(try voucher.signature(for: message))
        )
        return try await send(
            "POST",
            "/v1/devices/\(try Self.segment(device.id))/vouch",
            body: request,
            as: Device.self,
            credential: .device
        )
    }

    /// Endorses the authenticator `device` of this account as an approver of new devices (docs/PROTOCOL.md
    /// §1.2): this device, with `endorser` its current signing key, signs over the authenticator's current
    /// key, at `now`. Compare `approverCode(of:)` with the code the authenticator shows before calling this.
    public func endorseApprover(
        _ device: Device,
        username: String,
        endorserDeviceID: String,
        endorser: Identity,
        now: Date
    ) async throws -> Device {
        let endorsedAt = Int64(now.timeIntervalSince1970.rounded(.down))
        let key = try PublicKey(spki: device.signingKey.bytes)
        let message = DeviceProof.endorsementMessage(
            username: username.lowercased(),
            endorserDeviceID: endorserDeviceID,
            endorserSigningKey: endorser.publicKey,
            approverDeviceID: device.id,
            approverSigningKey: key,
            endorsedAt: endorsedAt
        )
        let request = ApproverEndorsementRequest(
            signingKeyId: Hex.encode(key.fingerprint.bytes),
            endorsedAt: endorsedAt,
            signature: Base64URL(try endorser.signature(for: message))
        )
        return try await send(
            "POST",
            "/v1/devices/\(try Self.segment(device.id))/endorsement",
            body: request,
            as: Device.self,
            credential: .device
        )
    }

    /// The code an authenticator shows for its endorsement: the link code of its keys as listed.
    public static func approverCode(of device: Device) -> String? {
        guard let signing = try? PublicKey(spki: device.signingKey.bytes),
            let encryption = try? PublicKey(spki: device.encryptionKey.bytes)
        else { return nil }
        return DeviceProof.linkCode(signingKey: signing, encryptionKey: encryption)
    }

    /// The link code of a device's keys as listed (`DeviceProof.linkCode`); nil when a key is not P-256.
    public static func linkCode(of device: DirectoryDevice) -> String? {
        guard let signing = try? PublicKey(spki: device.signingKey.bytes),
            let encryption = try? PublicKey(spki: device.encryptionKey.bytes)
        else { return nil }
        return DeviceProof.linkCode(signingKey: signing, encryptionKey: encryption)
    }

    /// The devices of `directory` (the own account's) waiting to be linked as `deviceID` (a messaging device,
    /// or an endorsed approver) sees them: active, not `deviceID`, added after it, and with no vouch on any
    /// of their keys. The account's first device and one added when every other was lost wait for nobody:
    /// no older device is left to approve them.
    public static func devicesAwaitingLink(_ directory: UserDirectory, seenBy deviceID: String) -> [DirectoryDevice] {
        guard
            let since = directory.devices.first(where: { $0.id == deviceID })?.createdAt
                ?? directory.approvers?.first(where: { $0.id == deviceID })?.createdAt
        else { return [] }
        let vouched = Set(directory.history.filter { $0.vouch != nil }.map(\.deviceId))
        return directory.devices.filter { $0.id != deviceID && $0.createdAt > since && !vouched.contains($0.id) }
    }

    /// A user's active devices and key history, with whichever session this client has.
    /// The key directory of `username` (compared in lower case, as the server stores names). An answer
    /// for any other name is refused: pins are looked up under the name asked, never the name answered.
    public func directory(username: String) async throws -> UserDirectory {
        let asked = username.lowercased()
        let answer = try await send(
            "GET",
            "/v1/users/\(try Self.segment(asked))/devices",
            as: UserDirectory.self,
            credential: deviceToken != nil ? .device : .account
        )
        guard answer.username == asked else {
            throw ClientError.directoryMismatch(asked: asked, answered: answer.username)
        }
        // IDs the server makes are short; a huge one is refused here, before any statement is built over it.
        let ids =
            answer.devices.map(\.id) + answer.history.map(\.deviceId) + answer.history.compactMap(\.vouch?.deviceId)
            + (answer.approvers ?? []).flatMap { [$0.id, $0.endorsement.deviceId] }
        guard ids.allSatisfy({ $0.utf8.count <= KeyPins.maxIDBytes }) else {
            throw ClientError.unexpectedResponse(
                status: 200,
                detail: "the key directory of \(asked) lists a device ID longer than \(KeyPins.maxIDBytes) bytes"
            )
        }
        return answer
    }

    /// Ends every session of the account, device sessions included.
    public func signOutEverywhere() async throws {
        try await send("DELETE", "/v1/sessions", credential: .account)
    }

    /// A path segment: IDs and usernames are plain ASCII; anything else is refused rather than escaped.
    static func segment(_ text: String) throws -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        guard !text.isEmpty, text.count <= 64, text.allSatisfy(allowed.contains) else {
            throw ClientError.unexpectedResponse(
                status: 0,
                detail: "\"\(text.prefix(40))\" is not a valid ID or username"
            )
        }
        return text
    }
}
