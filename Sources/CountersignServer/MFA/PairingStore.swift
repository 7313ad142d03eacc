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
    /// Deletes the key whatever its state and returns its account if it had not expired.
    func spendPairingKey(hash: String, now: Date) async throws -> String?
    /// Spends the key as `spendPairingKey` does and, if it was open, pairs in the same write transaction:
    /// the authenticator's device (unless the account has `maxDevices` active ones or a key ID is known),
    /// its authenticator record and its first device session, as `records` makes them for the key's
    /// account. A pairing is stored whole or not at all, so that a crash never leaves a spent key without
    /// its authenticator, nor a device without its record.
    func pair(
        keyHash: String,
        now: Date,
        maxDevices: Int,
        _ records: @escaping @Sendable (_ accountID: String) throws -> PairingRecords
    ) async throws -> PairingWrite
}
