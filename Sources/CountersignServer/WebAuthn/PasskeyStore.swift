import Foundation

/// The storage of passkeys (docs/PROTOCOL.md §5). Each backend's storage implements it; every rule that
/// concurrent requests could break is one statement or one write transaction here.
public protocol PasskeyStore: Sendable {
    /// The account's WebAuthn user handle, made from `candidate` on first use (insert if absent).
    func userHandle(accountID: String, candidate: [UInt8]) async throws -> [UInt8]
    /// The account whose user handle is `handle`.
    func account(userHandle: [UInt8]) async throws -> String?

    /// Stores a new ceremony (an account's: those are limited per account where they start).
    func createCeremony(id: String, state: Data, expiresAt: Date) async throws
    /// Records a ceremony the client carried (`SignInCeremony`) as answered, until `expiresAt`; false when it
    /// was already, so that it is answered once, even by concurrent requests.
    func spendCeremony(id: String, expiresAt: Date, now: Date) async throws -> Bool
    /// Deletes the ceremony whatever its state and returns it if it had not expired: a challenge is
    /// answered at most once, even by concurrent requests.
    func takeCeremony(id: String, now: Date) async throws -> Data?
    /// The ceremony if it exists and has not expired, left in place (a registration spends it when its
    /// passkey is stored, in the same transaction, or with `takeCeremony` when refused).
    func ceremony(id: String, now: Date) async throws -> Data?

    func passkeys(accountID: String) async throws -> [StoredPasskey]
    func passkey(credentialID: [UInt8]) async throws -> StoredPasskey?
    /// Gives a passkey stored without a PRF salt this one; returns the salt it has now.
    func setPRFSaltIfMissing(id: String, salt: [UInt8]) async throws -> [UInt8]
    /// Inserts unless the credential ID is registered (to any account), the account has `max`, or there is
    /// no such account. With `spending`, in the same transaction, deletes that ceremony first (whatever the
    /// outcome) and adds nothing if it was gone or had expired at `now`: the passkey is stored if and only if
    /// its ceremony is spent, even when the process dies between the two, and once even for concurrent
    /// answers to one ceremony. With `audit`, its row is written with the passkey when it is added: no
    /// passkey without its `passkey created` event, and no event without the passkey.
    func addPasskey(
        _ p: StoredPasskey,
        max: Int,
        spending ceremony: (id: String, now: Date)?,
        audit: AuditEntry?
    ) async throws
        -> PasskeyAddResult
    /// Records an accepted assertion if the stored count is still `expectedCount`; false when another
    /// assertion got there first (the caller refuses this one).
    func recordPasskeyUse(
        id: String,
        expectedCount: UInt32,
        newCount: UInt32,
        backedUp: Bool,
        at: Date
    )
        async throws -> Bool
    func renamePasskey(id: String, accountID: String, name: String) async throws -> Bool
    /// Deletes the passkey and ends the sessions its discoverable sign-ins made (but `keepingSession`), in one
    /// transaction; false when the account has no such passkey.
    func removePasskey(id: String, accountID: String, keepingSession: String) async throws -> Bool
    func purgeExpiredCeremonies(now: Date) async throws
}

public enum PasskeyAddResult: Equatable, Sendable {
    case added
    case credentialTaken
    case tooMany
    /// No such account (nothing to count against, so nothing is added).
    case accountNotFound
    /// The ceremony to spend was already spent (another answer to it got there first), had expired, or
    /// never existed.
    case ceremonyGone
}

public enum PasskeyStoreError: Error, Equatable, Sendable {
    /// The user-handle statement returned no row: a store that breaks its own contract.
    case noUserHandle(accountID: String)
}

/// A passkey as the server keeps it (docs/PROTOCOL.md §5.2).
public struct StoredPasskey: Equatable, Sendable {
    public var id: String
    public var accountID: String
    public var credentialID: [UInt8]
    public var publicKey: [UInt8]
    public var signCount: UInt32
    public var backupEligible: Bool
    public var backedUp: Bool
    public var aaguid: [UInt8]
    public var transports: [String]
    public var name: String
    public var createdAt: Date
    public var lastUsedAt: Date?
    /// The salt the key gate evaluates the passkey's PRF at (docs/SPEC.md §14); passkeys registered before
    /// it was kept get one on first read.
    public var prfSalt: [UInt8]
}

extension PasskeyStore {
    /// A passkey added with no audit row (tests of the store alone).
    func addPasskey(
        _ p: StoredPasskey,
        max: Int,
        spending ceremony: (id: String, now: Date)?
    ) async throws -> PasskeyAddResult {
        try await addPasskey(p, max: max, spending: ceremony, audit: nil)
    }
}
