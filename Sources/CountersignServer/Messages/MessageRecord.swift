import Foundation

/// A stored envelope and what the relay knows about it; `envelope` is ciphertext (docs/SPEC.md §8).
public struct MessageRecord: Equatable, Sendable {
    public var id: String
    public var senderAccountID: String
    public var senderDeviceID: String
    public var senderUsername: String
    public var recipients: [String]
    public var envelope: [UInt8]
    public var digest: String
    public var acceptedAt: Date
    public var deliverAt: Date
    public var expiresAt: Date
    public var recipientDevices: Int
    public var fetchedBy: Int
    public var acknowledgedBy: Int
    public var cancelled: Bool
}

/// One entry of a device's queue, with its message.
public struct QueueEntry: Equatable, Sendable {
    public var seq: Int64
    public var incoming: Bool
    public var message: MessageRecord
}

/// One send, as the store checks and writes it.
public struct StoreRequest: Sendable {
    /// Its `recipients` and `senderUsername` name the accounts whose devices the envelope must be sealed
    /// to; the store reads them inside its write transaction (an unknown name is refused there).
    public var message: MessageRecord
    /// The signing key the envelope's signature was verified with.
    public var senderSigningKeyID: String
    /// The encryption key IDs the envelope is sealed to.
    public var keyIDs: Set<String>
}

/// What storing a message came to.
public enum StoreOutcome: Equatable, Sendable {
    /// Stored; `accounts` are the accounts (recipients and sender) whose devices got a queue entry.
    case stored(recipientDevices: Int, accounts: [String])
    /// The same bytes were stored before (a retried request): the earlier record.
    case duplicate(MessageRecord)
    case idReused
    /// No account has these recipient names.
    case unknownRecipients([String])
    /// The sending device was revoked or its keys rotated after its signature was checked.
    case senderChanged
    case deviceMismatch(missing: [DeviceKeyRefRecord], extra: [String])
}

/// A device as a mismatch names it.
public struct DeviceKeyRefRecord: Equatable, Sendable {
    public var username: String
    public var deviceID: String
    public var encryptionKeyID: String
}

public enum CancelOutcome: Equatable, Sendable {
    case cancelled, notFound, alreadyDelivered
}
