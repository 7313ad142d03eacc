#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `POST /v1/messages`: one envelope (docs/SPEC.md §8) sealed to every active device of every recipient
/// and of the sender.
public struct SendMessageRequest: Codable, Sendable {
    public var to: [String]
    public var envelope: Base64URL
    /// Seconds to hold the message before recipients see it: 0 to 2,592,000 (30 days).
    public var deliverAfter: Int?
    public init(to: [String], envelope: Base64URL, deliverAfter: Int? = nil) {
        self.to = to
        self.envelope = envelope
        self.deliverAfter = deliverAfter
    }
}

public struct SentMessage: Codable, Equatable, Sendable {
    /// The envelope's message ID, 32 lowercase hex characters.
    public var id: String
    public var acceptedAt: Date
    public var deliverAt: Date
    /// Recipient devices queued (the sender's own devices not counted).
    public var recipientDevices: Int
    public init(id: String, acceptedAt: Date, deliverAt: Date, recipientDevices: Int) {
        self.id = id
        self.acceptedAt = acceptedAt
        self.deliverAt = deliverAt
        self.recipientDevices = recipientDevices
    }
}

/// One entry of a device's queue.
public struct QueuedMessage: Codable, Equatable, Sendable {
    /// Position in this device's queue: strictly increasing, the cursor for the next fetch.
    public var seq: Int64
    public var id: String
    /// `incoming`, or `outgoing` for a copy of what this account sent from any of its devices.
    public var direction: String
    public var from: String
    public var fromDevice: String
    public var to: [String]
    public var envelope: Base64URL
    public var acceptedAt: Date
    public var deliverAt: Date
    public init(
        seq: Int64,
        id: String,
        direction: String,
        from: String,
        fromDevice: String,
        to: [String],
        envelope: Base64URL,
        acceptedAt: Date,
        deliverAt: Date
    ) {
        self.seq = seq
        self.id = id
        self.direction = direction
        self.from = from
        self.fromDevice = fromDevice
        self.to = to
        self.envelope = envelope
        self.acceptedAt = acceptedAt
        self.deliverAt = deliverAt
    }
}

public struct MessagePage: Codable, Equatable, Sendable {
    public var messages: [QueuedMessage]
    /// Pass as `after` to continue; nil when this page was the last one due now.
    public var next: Int64?
    public init(messages: [QueuedMessage], next: Int64?) {
        self.messages = messages
        self.next = next
    }
}

/// `POST /v1/devices/current/acks`: queue positions this device has stored; they are deleted.
public struct AckRequest: Codable, Sendable {
    public var seqs: [Int64]
    public init(seqs: [Int64]) { self.seqs = seqs }
}

public struct AckResult: Codable, Equatable, Sendable {
    public var acknowledged: Int
    public init(acknowledged: Int) { self.acknowledged = acknowledged }
}

/// `GET /v1/messages/{id}`, for the sending account: delivery state and receipts.
public struct MessageStatus: Codable, Equatable, Sendable {
    public var id: String
    public var to: [String]
    public var acceptedAt: Date
    public var deliverAt: Date
    public var recipientDevices: Int
    /// Recipient devices that have fetched it at least once (`GET /v1/devices/current/messages`); a
    /// delivery over the push channel counts here when the device acknowledges it.
    public var fetchedBy: Int
    /// Recipient devices that acknowledged (stored) it.
    public var acknowledgedBy: Int
    public var cancelled: Bool
    public init(
        id: String,
        to: [String],
        acceptedAt: Date,
        deliverAt: Date,
        recipientDevices: Int,
        fetchedBy: Int,
        acknowledgedBy: Int,
        cancelled: Bool
    ) {
        self.id = id
        self.to = to
        self.acceptedAt = acceptedAt
        self.deliverAt = deliverAt
        self.recipientDevices = recipientDevices
        self.fetchedBy = fetchedBy
        self.acknowledgedBy = acknowledgedBy
        self.cancelled = cancelled
    }
}
