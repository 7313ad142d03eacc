import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation

/// What the server does for the browser's key gate (docs/SPEC.md §14): it keeps a device's revocation
/// token (as a hash) and revokes the device when a locked-out browser presents it, and it writes the
/// gate's events into the audit log. The keys and their wrapping never reach it.
extension DeviceService {
    static let revocationTokenLength = 32
    static let gateEvents: Set<String> = [
        "enabled", "disabled", "unlocked", "unlock-failed", "wiped", "method-added", "method-removed",
    ]
    static let gateMethods: Set<String> = ["prf", "password"]

    /// Sets the token, as revoking the device would be allowed (a recent full authentication: a QR
    /// session or a stale one is refused) and only by the device itself (its signature): a token set by
    /// anyone else would let them revoke the device anonymously, and silently replace a gate's own.
    public func setRevocationToken(
        _ auth: Authenticated,
        deviceID: String,
        _ setting: DeviceRevocationTokenSetting,
        origin: RequestOrigin
    ) async throws {
        try sessions.requireRecentAuthentication(auth)
        let token = setting.token
        guard token.bytes.count == Self.revocationTokenLength else {
            throw RequestError.invalidField(field: "token", reason: "32 bytes, base64url")
        }
        guard deviceID.utf8.count <= 64, let device = try await store.device(id: deviceID),
            device.kind == DeviceRecord.messaging, device.accountID == auth.account.id, device.revokedAt == nil
        else { throw DeviceError.notFound }
        let hash = Array(SHA256.hash(data: token.bytes))
        let message = DeviceProof.revocationTokenMessage(
            deviceID: deviceID,
            accountID: auth.account.id,
            tokenHash: hash
        )
        guard (try? PublicKey(spki: device.signingKey))?.isValidSignature(setting.signature.bytes, for: message) == true
        else {
            throw DeviceError.badSignature(
                "signature does not verify with this device's signing key: only the device itself sets its revocation token"
            )
        }
        guard
            try await store.setRevocationTokenHash(
                hash,
                deviceID: deviceID,
                accountID: auth.account.id,
                signingKeyID: device.signingKeyID
            ) == .done
        else { throw DeviceError.notFound }
        try await audit.record(auth.account.id, .keyGate, .revocationTokenSet, origin)
    }

    /// Anyone holding the token may revoke the device: it opens nothing, and only ends the device. A
    /// wrong token and an unknown or revoked device get the same answer.
    public func revokeByToken(deviceID: String, token: Base64URL, origin: RequestOrigin) async throws {
        if let wait = selfRevocations.take(origin.address, now: clock.now()) {
            throw RequestError.rateLimited(retryAfter: wait)
        }
        guard deviceID.utf8.count <= 64, token.bytes.count == Self.revocationTokenLength,
            let target = try await store.revocationTokenHash(deviceID: deviceID),
            ConstantTime.equal(target.hash, Array(SHA256.hash(data: token.bytes))),
            try await store.revoke(deviceID: deviceID, accountID: target.accountID, at: clock.now()) == .done
        else { throw DeviceError.notFound }
        sessions.ended(.device(deviceID))
        try await audit.record(target.accountID, .deviceRevoke, .selfRevoked, origin)
    }

    public func recordGateEvent(_ auth: Authenticated, _ e: KeyGateEvent, origin: RequestOrigin) async throws {
        guard Self.gateEvents.contains(e.event) else {
            throw RequestError.invalidField(field: "event", reason: Self.gateEvents.sorted().joined(separator: ", "))
        }
        guard Self.gateMethods.contains(e.method) else {
            throw RequestError.invalidField(field: "method", reason: "prf or password")
        }
        if let wait = gateEventsPerAccount.take("account " + auth.account.id, now: clock.now()) {
            throw RequestError.rateLimited(retryAfter: wait)
        }
        try await audit.record(auth.account.id, .keyGate, .gate(event: e.event, method: e.method), origin)
    }
}
