import Foundation

/// A device as stored: its current keys as SPKI DER and their key IDs (docs/SPEC.md §2.4, hex).
public struct DeviceRecord: Equatable, Sendable {
    public var id: String
    public var accountID: String
    public var name: String
    public var signingKey: [UInt8]
    public var signingKeyID: String
    public var encryptionKey: [UInt8]
    public var encryptionKeyID: String
    public var createdAt: Date
    public var keysSince: Date
    public var lastSeenAt: Date?
    public var revokedAt: Date?
    /// `messaging` (in the key directory, sealed to) or `authenticator` (approves sign-ins; holds no mail).
    public var kind: String = DeviceRecord.messaging

    public static let messaging = "messaging", authenticator = "authenticator"

    public var isActive: Bool { revokedAt == nil }
}

/// One key pair a device has had.
public struct KeyHistoryRecord: Equatable, Sendable {
    public var deviceID: String
    public var signingKey: [UInt8]
    public var signingKeyID: String
    public var encryptionKeyID: String
    public var addedAt: Date
    public var retiredAt: Date?
    public var retiredBecause: String?
    /// Absent on keys registered before it was kept.
    public var encryptionKey: [UInt8]?
    /// On a key that replaced another: the old signing key's signature over the rotation (docs/PROTOCOL.md §1).
    public var rotationSignature: [UInt8]?
    /// Another device of the account vouched for this key when the device was linked (docs/PROTOCOL.md §1).
    public var vouch: KeyVouch? = nil
    /// The key's own signature over its registration or rotation (docs/PROTOCOL.md §1.3).
    public var proof: KeySelfProof? = nil
}

/// A key's own signature over the statement that brought it in, as stored: the registration (with the
/// challenge it signed) or the rotation (the new key's signature; `challenge` nil).
public struct KeySelfProof: Equatable, Sendable {
    public var challenge: [UInt8]?
    public var signature: [UInt8]
}

/// A vouch as stored: the vouching device, the signed time in whole seconds, and the signature.
public struct KeyVouch: Equatable, Sendable {
    public var deviceID: String
    public var vouchedAt: Int64
    public var signature: [UInt8]
}

/// What adding a device or new keys came to.
public enum DeviceWrite: Equatable, Sendable {
    case done
    case limitReached
    case keyInUse
    case notFound
    /// The device's keys changed meanwhile (a concurrent rotation won).
    case changed
    /// The device was vouched for already (by this or another device).
    case alreadyVouched
    /// Nothing to write: the key has what was to be kept already (a key proof).
    case unchanged
}
