import Foundation

/// The storage the device service needs. Each backend's storage implements it; each method is atomic.
public protocol DeviceStore: Sendable {
    /// Records a single-use challenge under the SHA-256 of its bytes.
    func createChallenge(hash: String, kind: String, subject: String, expiresAt: Date) async throws
    /// Deletes the challenge and says whether it existed for this kind and subject and had not expired.
    func spendChallenge(hash: String, kind: String, subject: String, now: Date) async throws -> Bool

    /// Inserts the device and its first key-history row (with `proof`, the key's signature over its
    /// registration), unless the account has `maxActive` active devices or either key ID is known.
    func addDevice(_ device: DeviceRecord, proof: KeySelfProof?, maxActive: Int) async throws -> DeviceWrite
    func device(id: String) async throws -> DeviceRecord?
    /// The account's devices, oldest first; revoked ones included when asked.
    func devices(accountID: String, includeRevoked: Bool) async throws -> [DeviceRecord]
    func keyHistory(accountID: String) async throws -> [KeyHistoryRecord]
    /// The account's active authenticators whose current key carries an endorsement (docs/PROTOCOL.md §1.2),
    /// oldest first.
    func approvers(accountID: String) async throws -> [(DeviceRecord, KeyVouch)]
    func rename(deviceID: String, accountID: String, name: String) async throws -> DeviceWrite
    /// Marks the device revoked, retires its keys, ends its sessions and drops its undelivered queue.
    func revoke(deviceID: String, accountID: String, at: Date) async throws -> DeviceWrite
    /// Keeps the SHA-256 of the device's revocation token (docs/SPEC.md §14.5), replacing any earlier one,
    /// if the device is the account's, not revoked, and its signing key is still the one that signed it.
    func setRevocationTokenHash(
        _ hash: [UInt8],
        deviceID: String,
        accountID: String,
        signingKeyID: String
    ) async throws -> DeviceWrite
    /// The device's account and revocation-token hash, if it is active and has one.
    func revocationTokenHash(deviceID: String) async throws -> (accountID: String, hash: [UInt8])?
    /// Replaces the device's keys (only if its signing key is still `expectedSigningKeyID`).
    /// `oldKeySignature` (the old key vouching for the new, docs/PROTOCOL.md §1) and `newKeySignature` (the
    /// new key's own, §1.3) are kept with the new key, so that readers can follow the rotation, and check the
    /// new key chose its encryption key, without trusting the server.
    func rotate(
        deviceID: String,
        expectedSigningKeyID: String,
        signingKey: [UInt8],
        signingKeyID: String,
        encryptionKey: [UInt8],
        encryptionKeyID: String,
        oldKeySignature: [UInt8],
        newKeySignature: [UInt8],
        at: Date
    ) async throws -> DeviceWrite
    /// Keeps `vouch` on the device's current key if the device is the account's, active, of `kind` (a
    /// messaging device vouched for, or an authenticator endorsed as an approver), its signing key is still
    /// `signingKeyID`, none of its keys was vouched for before (an authenticator's endorsement is replaced),
    /// and the vouching device is still active with the signing key `voucherSigningKeyID` (else `.notFound`).
    func vouch(
        deviceID: String,
        accountID: String,
        kind: String,
        signingKeyID: String,
        vouch: KeyVouch,
        voucherSigningKeyID: String
    ) async throws -> DeviceWrite
    /// Keeps `proof` on the device's current key if it is still `signingKeyID` and has none (`.done` then,
    /// and when it had one already; `.notFound` when the key changed or the device is gone).
    func setKeyProof(deviceID: String, signingKeyID: String, proof: KeySelfProof) async throws -> DeviceWrite
    func touchDevice(id: String, at: Date) async throws
    /// Deletes expired challenges and device sessions.
    func purgeExpiredDevices(now: Date, idle: TimeInterval) async throws
}
