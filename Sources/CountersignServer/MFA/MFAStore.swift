import Foundation

/// An authenticator as stored: its TOTP secret is sealed under the server's key (`SecretBox`).
public struct AuthenticatorRecord: Equatable, Sendable {
    public var deviceID: String
    public var accountID: String
    public var pushAllowed: Bool
    public var sealedTOTPSecret: [UInt8]
    public var lastStep: UInt64?
    public var pairedAt: Date
}

/// What one pairing stores (`MFAStore.pair`).
public struct PairingRecords: Sendable {
    public var device: DeviceRecord
    public var authenticator: AuthenticatorRecord
    public var session: DeviceSessionRecord
}

/// What `MFAStore.pair` did.
public enum PairingWrite: Equatable, Sendable {
    case paired(accountID: String)
    /// Wrong, used or expired: nothing stored.
    case keyInvalid
    /// The key is spent and nothing paired: the device limit, a key in use, or no such account.
    case refused(DeviceWrite)
    /// The key is spent and nothing paired: its account is locked (a key issued just before the lock).
    case accountLocked
}

/// The storage of multi-factor sign-in. Each backend's storage implements it. Versioned values (account state,
/// transactions, authentication codes) change only by compare-and-set on their version.
public protocol MFAStore: ServerSecretStore {
    func accountState(_ accountID: String) async throws -> (state: Data, version: Int64)?
    /// Writes when the stored version is `expected` (nil: no row yet); false when someone else wrote first.
    func saveAccountState(_ accountID: String, state: Data, expected: Int64?) async throws -> Bool

    func authenticators(accountID: String) async throws -> [AuthenticatorRecord]
    func authenticator(deviceID: String) async throws -> AuthenticatorRecord?
    func setPushAllowed(deviceID: String, _ allowed: Bool) async throws
    /// Records `step` as the authenticator's last accepted passcode step if it is later than the stored
    /// one; false when it is not (a replayed code, or a concurrent use of the same one).
    func advanceStep(deviceID: String, to step: UInt64) async throws -> Bool
    func removeAuthenticators(accountID: String) async throws -> [String]

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

    /// Inserts the transaction unless the account already has `maxOpen` unexpired, unfinished ones
    /// (counted and inserted atomically); false when it has.
    func createTransaction(
        id: String,
        accountID: String,
        bindingHash: String,
        state: Data,
        expiresAt: Date,
        maxOpen: Int,
        now: Date
    ) async throws -> Bool
    func transaction(id: String) async throws -> (accountID: String, bindingHash: String, state: Data, version: Int64)?
    /// `finished`: the new state is terminal (it no longer counts toward the cap on open transactions).
    func updateTransaction(id: String, state: Data, finished: Bool, expected: Int64) async throws -> Bool

    func addChallenges(
        _ challenges: [(deviceID: String, transactionID: String, jwt: String)],
        expiresAt: Date
    ) async throws
    func pendingChallenges(deviceID: String, now: Date) async throws -> [String]
    func removeChallenges(transactionID: String) async throws

    func replaceRecoveryCodes(accountID: String, hashes: [String]) async throws
    func spendRecoveryCode(accountID: String, hash: String) async throws -> Bool
    func recoveryCodesLeft(accountID: String) async throws -> Int

    func createAuthCode(hash: String, bindingHash: String, state: Data, expiresAt: Date) async throws
    func authCode(hash: String) async throws -> (state: Data, version: Int64)?
    func authCode(bindingHash: String) async throws -> (hash: String, state: Data, version: Int64)?
    func updateAuthCode(hash: String, state: Data, expected: Int64) async throws -> Bool

    func addLog(supportID: String, deviceID: String, accountID: String, at: Date, text: String) async throws
    func purgeExpiredMFA(now: Date) async throws
}
