import CountersignAPI
import Foundation

/// A message as a device keeps it: the relay's metadata and the sealed envelope, never the plaintext. A
/// message sent from this device is recorded at once without its envelope; the copy the server queues
/// for this device fills it in. (The CLI keeps each in `messages/<id>.json`, mode 0600.)
public struct StoredMessage: Codable, Equatable, Sendable {
    public var id: String
    /// `incoming`, or `outgoing` for what this account sent.
    public var direction: String
    public var from: String
    public var fromDevice: String
    public var to: [String]
    /// The envelope's `created` (the sender's clock, signed; checked when the message is read).
    public var sentAt: Date
    public var acceptedAt: Date
    public var deliverAt: Date
    /// Unpadded base64url of the envelope's bytes; nil for a sent message whose copy has not arrived.
    public var envelope: Base64URL?
    public var read: Bool
    public var readAt: Date?

    public init(
        id: String,
        direction: String,
        from: String,
        fromDevice: String,
        to: [String],
        sentAt: Date,
        acceptedAt: Date,
        deliverAt: Date,
        envelope: Base64URL?,
        read: Bool,
        readAt: Date?
    ) {
        self.id = id
        self.direction = direction
        self.from = from
        self.fromDevice = fromDevice
        self.to = to
        self.sentAt = sentAt
        self.acceptedAt = acceptedAt
        self.deliverAt = deliverAt
        self.envelope = envelope
        self.read = read
        self.readAt = readAt
    }

    public var incoming: Bool { direction == "incoming" }
    public var peer: String { incoming ? from : to.joined(separator: ",") }

    /// A message ID: 32 lowercase hex digits (it names a file).
    public static func isID(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
