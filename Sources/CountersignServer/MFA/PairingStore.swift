import Foundation

/// What one pairing stores (`PairingStore.pair`).
public struct PairingRecords: Sendable {
    public var device: DeviceRecord
    public var authenticator: AuthenticatorRecord
    public var session: DeviceSessionRecord
}

/// What `PairingStore.pair` did.
public enum PairingWrite: Equatable, Sendable {
    case paired(accountID: String)
    /// Wrong, used or expired: nothing stored.
    case keyInvalid
    /// The key is spent and nothing paired: the device limit, a key in use, or no such account.
    case refused(DeviceWrite)
    /// The key is spent and nothing paired: its account is locked (a key issued just before the lock).
    case accountLocked
    /// The key is spent and nothing paired: it is a grant of `accountID` bound to another signing key.
    case otherKey(accountID: String)
}

/// What `PairingStore.openPairingGrant` did.
public enum PairingGrantWrite: Equatable, Sendable {
    case opened
    /// The mobile payload was used before (until it expires, a payload opens one grant).
    case payloadUsed
    /// The account already has as many open pairing keys as allowed.
    case tooMany
}

/// The storage of pairing keys and of the pairing they are spent on.
public protocol PairingStore: Sendable {
    /// Inserts the key unless the account already has `maxOpen` unexpired ones (counted and inserted
    /// atomically); false when it has.
    func createPairingKey(
        hash: String,
        accountID: String,
        expiresAt: Date,
        maxOpen: Int,
        now: Date
    ) async throws -> Bool
    /// As `createPairingKey`, for a pairing grant (docs/PROTOCOL.md §6.11): bound to one signing key (`boundKey`,
    /// SHA-256 hex of its SPKI), and only once per mobile payload (`payloadHash`, remembered until
    /// `payloadExpiresAt`), in one write transaction.
    func openPairingGrant(
        hash: String,
        accountID: String,
        boundKey: String,
        payloadHash: String,
        expiresAt: Date,
        payloadExpiresAt: Date,
        maxOpen: Int,
        now: Date
    ) async throws -> PairingGrantWrite
    /// Deletes every pairing key and grant of the account.
    func deletePairingKeys(accountID: String) async throws
    /// Deletes the key whatever its state and returns its account if it had not expired.
    func spendPairingKey(hash: String, now: Date) async throws -> String?
    /// Spends the key as `spendPairingKey` does and, if it was open, pairs in the same write transaction:
    /// the authenticator's device (unless the account has `maxDevices` active ones or a key ID is known),
    /// its authenticator record and its first device session, as `records` makes them for the key's
    /// account. A pairing is stored whole or not at all, so that a crash never leaves a spent key without
    /// its authenticator, nor a device without its record.
    /// A key bound to a signing key (a grant) pairs only a device whose signing key hashes to it
    /// (`signingKeyHash`): any other is `otherKey`, and the grant spent.
    func pair(
        keyHash: String,
        signingKeyHash: String,
        now: Date,
        maxDevices: Int,
        _ records: @escaping @Sendable (_ accountID: String) throws -> PairingRecords
    ) async throws -> PairingWrite
}
