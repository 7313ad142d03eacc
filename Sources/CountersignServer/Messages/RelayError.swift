import CountersignAPI
import Foundation

/// Why the relay refused a message operation. Closed; `Problem.init(_:)` maps each case to one problem type.
public enum RelayError: Error, Equatable, Sendable {
    /// The envelope does not parse as docs/SPEC.md §8 (the reason says which rule).
    case invalidEnvelope(String)
    /// The envelope is not signed by the sending device's current signing key, or the signature fails.
    case forgedSender(String)
    /// Some `to` names have no account.
    case unknownRecipients([String])
    /// The envelope's recipients are not exactly the current devices: what to add and what to drop.
    case deviceMismatch(missing: [DeviceKeyRef], extra: [DeviceKeyRef])
    /// The sending device was revoked, or its keys rotated, while the send was on its way.
    case senderRevoked
    /// The message ID was used before with other bytes.
    case messageIDReused
    /// No such message of this account (or of this device's queue).
    case notFound
    /// The message is already visible to its recipients and cannot be cancelled.
    case alreadyDelivered
    /// The account sent more than `perMinute` messages in the last minute; one more is allowed in `retryAfter`.
    case sendRateLimited(perMinute: Int, retryAfter: TimeInterval)
    /// The account's stored messages would exceed its quota; the oldest expires in `retryAfter`.
    case quotaExceeded(limitBytes: Int64, retryAfter: TimeInterval)
}
