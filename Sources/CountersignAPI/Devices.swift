#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A fresh server challenge (registration) or nonce (device session): 32 bytes, single use.
public struct DeviceChallenge: Codable, Equatable, Sendable {
    public var challenge: Base64URL
    public var expiresAt: Date
    public init(challenge: Base64URL, expiresAt: Date) {
        self.challenge = challenge
        self.expiresAt = expiresAt
    }
}

/// `POST /v1/devices`: keys as SPKI DER, and a signature by the signing key over the registration
/// message (docs/PROTOCOL.md §1).
public struct DeviceRegistrationRequest: Codable, Sendable {
    public var name: String
    public var signingKey: Base64URL
    public var encryptionKey: Base64URL
    public var challenge: Base64URL
    public var signature: Base64URL
    public init(
        name: String,
        signingKey: Base64URL,
        encryptionKey: Base64URL,
        challenge: Base64URL,
        signature: Base64URL
    ) {
        self.name = name
        self.signingKey = signingKey
        self.encryptionKey = encryptionKey
        self.challenge = challenge
        self.signature = signature
    }
}

/// What a device is for (docs/PROTOCOL.md §3): a `messaging` device is in the key directory, is sealed to
/// and holds mail; an `authenticator` approves sign-ins (a paired PingOne-style app or browser) and holds none.
public enum DeviceKind: String, Codable, Equatable, Sendable {
    case messaging, authenticator
}

/// A device as its own account sees it.
public struct Device: Codable, Equatable, Sendable {
    public var id: String
    public var name: String
    public var kind: DeviceKind
    public var signingKey: Base64URL
    public var signingKeyId: String
    public var encryptionKey: Base64URL
    public var encryptionKeyId: String
    public var createdAt: Date
    /// When the current keys were registered (creation or the last rotation).
    public var keysSince: Date
    public var lastSeenAt: Date?
    public var revokedAt: Date?
    /// Another device of the account vouched for this one (docs/PROTOCOL.md §1); nil for the account's first
    /// device, one added when every other was lost, and one still waiting to be approved.
    public var vouch: DeviceVouch?
    /// On an authenticator endorsed to approve new devices (docs/PROTOCOL.md §1.2): by which device, when.
    public var endorsement: ApproverEndorsement?
    public init(
        id: String,
        name: String,
        kind: DeviceKind,
        signingKey: Base64URL,
        signingKeyId: String,
        encryptionKey: Base64URL,
        encryptionKeyId: String,
        createdAt: Date,
        keysSince: Date,
        lastSeenAt: Date?,
        revokedAt: Date?,
        vouch: DeviceVouch? = nil,
        endorsement: ApproverEndorsement? = nil
    ) {
        self.id = id
        self.name = name
        self.kind = kind
        self.vouch = vouch
        self.endorsement = endorsement
        self.signingKey = signingKey
        self.signingKeyId = signingKeyId
        self.encryptionKey = encryptionKey
        self.encryptionKeyId = encryptionKeyId
        self.createdAt = createdAt
        self.keysSince = keysSince
        self.lastSeenAt = lastSeenAt
        self.revokedAt = revokedAt
    }
}

public struct DeviceList: Codable, Equatable, Sendable {
    public var devices: [Device]
    public init(devices: [Device]) { self.devices = devices }
}

public struct DeviceRenameRequest: Codable, Sendable {
    public var name: String
    public init(name: String) { self.name = name }
}

/// `POST /v1/device-sessions/challenges`.
public struct DeviceSessionChallengeRequest: Codable, Sendable {
    public var deviceId: String
    public init(deviceId: String) { self.deviceId = deviceId }
}

/// `POST /v1/device-sessions`: the nonce signed by the device's current signing key.
public struct DeviceSessionRequest: Codable, Sendable {
    public var deviceId: String
    public var nonce: Base64URL
    public var signature: Base64URL
    public init(deviceId: String, nonce: Base64URL, signature: Base64URL) {
        self.deviceId = deviceId
        self.nonce = nonce
        self.signature = signature
    }
}

public struct DeviceSession: Codable, Equatable, Sendable {
    public var token: String
    public var expiresAt: Date
    public var device: Device
    public var username: String
    public init(token: String, expiresAt: Date, device: Device, username: String) {
        self.token = token
        self.expiresAt = expiresAt
        self.device = device
        self.username = username
    }
}

/// `POST /v1/devices/current/keys`: new keys, vouched for by the old signing key and proven by the new.
public struct KeyRotationRequest: Codable, Sendable {
    public var signingKey: Base64URL
    public var encryptionKey: Base64URL
    public var oldKeySignature: Base64URL
    public var newKeySignature: Base64URL
    public init(signingKey: Base64URL, encryptionKey: Base64URL, oldKeySignature: Base64URL, newKeySignature: Base64URL)
    {
        self.signingKey = signingKey
        self.encryptionKey = encryptionKey
        self.oldKeySignature = oldKeySignature
        self.newKeySignature = newKeySignature
    }
}

/// One device of a user in the key directory: what a sender seals to and whose signatures it checks.
public struct DirectoryDevice: Codable, Equatable, Sendable {
    public var id: String
    public var name: String
    public var signingKey: Base64URL
    public var signingKeyId: String
    public var encryptionKey: Base64URL
    public var encryptionKeyId: String
    public var createdAt: Date
    public var keysSince: Date
    public init(
        id: String,
        name: String,
        signingKey: Base64URL,
        signingKeyId: String,
        encryptionKey: Base64URL,
        encryptionKeyId: String,
        createdAt: Date,
        keysSince: Date
    ) {
        self.id = id
        self.name = name
        self.signingKey = signingKey
        self.signingKeyId = signingKeyId
        self.encryptionKey = encryptionKey
        self.encryptionKeyId = encryptionKeyId
        self.createdAt = createdAt
        self.keysSince = keysSince
    }
}

/// A key a device had: current, rotated away or revoked, and when.
public struct KeyHistoryEntry: Codable, Equatable, Sendable {
    public var deviceId: String
    public var signingKeyId: String
    public var encryptionKeyId: String
    /// The public signing key, so that messages signed before a rotation still verify.
    public var signingKey: Base64URL
    public var addedAt: Date
    public var retiredAt: Date?
    /// `rotated` or `revoked` once retired.
    public var retiredBecause: String?
    /// The public encryption key (absent on keys registered before servers kept it).
    public var encryptionKey: Base64URL?
    /// On a key that replaced another by rotation: the previous signing key's signature over the rotation
    /// message (docs/PROTOCOL.md §1), so that a client that pinned the previous key can follow the rotation
    /// without trusting the server.
    public var rotationSignature: Base64URL?
    /// On a key another device of the account vouched for when it was linked (docs/PROTOCOL.md §1), so that
    /// contacts who pinned the voucher follow the new device without trusting the server.
    public var vouch: DeviceVouch?
    /// The key's own proof that it chose `encryptionKey` (docs/PROTOCOL.md §1.3): absent on keys registered
    /// before servers kept it.
    public var keyProof: KeyProof?
    public init(
        deviceId: String,
        signingKeyId: String,
        encryptionKeyId: String,
        signingKey: Base64URL,
        addedAt: Date,
        retiredAt: Date?,
        retiredBecause: String?,
        encryptionKey: Base64URL? = nil,
        rotationSignature: Base64URL? = nil,
        vouch: DeviceVouch? = nil,
        keyProof: KeyProof? = nil
    ) {
        self.vouch = vouch
        self.keyProof = keyProof
        self.deviceId = deviceId
        self.signingKeyId = signingKeyId
        self.encryptionKeyId = encryptionKeyId
        self.signingKey = signingKey
        self.addedAt = addedAt
        self.retiredAt = retiredAt
        self.retiredBecause = retiredBecause
        self.encryptionKey = encryptionKey
        self.rotationSignature = rotationSignature
    }
}

/// A device key's signature over the statement that brought its key pair in (docs/PROTOCOL.md §1.3): its
/// registration (`statement` "registration", with the server's challenge and the account ID it signed) or the
/// rotation to it (`statement` "rotation", with the signing key it replaced; the new key's own signature).
/// Both messages name the encryption key, so a client that checks this before it first seals to a device
/// knows the device's signing key chose that encryption key: a server cannot pair a real signing key (the one
/// a safety number covers) with an encryption key of its own.
public struct KeyProof: Codable, Equatable, Sendable {
    public static let registration = "registration", rotation = "rotation"
    public var statement: String
    public var challenge: Base64URL?
    public var accountId: String?
    public var previousSigningKey: Base64URL?
    public var signature: Base64URL
    public init(
        statement: String,
        challenge: Base64URL? = nil,
        accountId: String? = nil,
        previousSigningKey: Base64URL? = nil,
        signature: Base64URL
    ) {
        self.statement = statement
        self.challenge = challenge
        self.accountId = accountId
        self.previousSigningKey = previousSigningKey
        self.signature = signature
    }
}

/// `PUT /v1/devices/current/key-proof`, from a device session: the proof a device registered before servers
/// kept proofs gives for its current keys (docs/PROTOCOL.md §1.3): the registration message over 32 bytes the
/// device chose, signed by its current signing key.
public struct KeyProofRequest: Codable, Sendable {
    public var challenge: Base64URL
    public var signature: Base64URL
    public init(challenge: Base64URL, signature: Base64URL) {
        self.challenge = challenge
        self.signature = signature
    }
}

/// A device's vouch for a new device of its account: who vouched, when (whole seconds since 1970, as
/// signed), and the signature over the vouch message (docs/PROTOCOL.md §1).
public struct DeviceVouch: Codable, Equatable, Sendable {
    /// The vouching device's ID.
    public var deviceId: String
    public var vouchedAt: Int64
    public var signature: Base64URL
    public init(deviceId: String, vouchedAt: Int64, signature: Base64URL) {
        self.deviceId = deviceId
        self.vouchedAt = vouchedAt
        self.signature = signature
    }
}

/// `POST /v1/devices/{id}/vouch`, from a device session of another device of the account: the key vouched
/// for (the new device's current signing key ID, so that a key changed meanwhile is not vouched), the time
/// and the signature by the vouching device's current signing key.
public struct DeviceVouchRequest: Codable, Sendable {
    public var signingKeyId: String
    public var vouchedAt: Int64
    public var signature: Base64URL
    public init(signingKeyId: String, vouchedAt: Int64, signature: Base64URL) {
        self.signingKeyId = signingKeyId
        self.vouchedAt = vouchedAt
        self.signature = signature
    }
}

/// `GET /v1/users/{username}/devices`.
public struct UserDirectory: Codable, Equatable, Sendable {
    public var username: String
    public var devices: [DirectoryDevice]
    public var history: [KeyHistoryEntry]
    /// The account's authenticators endorsed as approvers of new devices (docs/PROTOCOL.md §1.2); absent
    /// from servers before them.
    public var approvers: [DirectoryApprover]?
    public init(
        username: String,
        devices: [DirectoryDevice],
        history: [KeyHistoryEntry],
        approvers: [DirectoryApprover]? = nil
    ) {
        self.username = username
        self.devices = devices
        self.history = history
        self.approvers = approvers
    }
}

/// An authenticator of the account that a messaging device endorsed to approve new devices: its current
/// signing key and the endorsement over it (docs/PROTOCOL.md §1.2). Nothing is sealed to it.
public struct DirectoryApprover: Codable, Equatable, Sendable {
    public var id: String
    public var name: String
    public var signingKey: Base64URL
    public var signingKeyId: String
    public var createdAt: Date
    public var endorsement: ApproverEndorsement
    public init(
        id: String,
        name: String,
        signingKey: Base64URL,
        signingKeyId: String,
        createdAt: Date,
        endorsement: ApproverEndorsement
    ) {
        self.id = id
        self.name = name
        self.signingKey = signingKey
        self.signingKeyId = signingKeyId
        self.createdAt = createdAt
        self.endorsement = endorsement
    }
}

/// Who endorsed an approver, when (whole seconds since 1970, as signed), and the signature over the
/// endorsement message (docs/PROTOCOL.md §1.2).
public struct ApproverEndorsement: Codable, Equatable, Sendable {
    /// The endorsing messaging device's ID.
    public var deviceId: String
    public var endorsedAt: Int64
    public var signature: Base64URL
    public init(deviceId: String, endorsedAt: Int64, signature: Base64URL) {
        self.deviceId = deviceId
        self.endorsedAt = endorsedAt
        self.signature = signature
    }
}

/// `POST /v1/devices/{id}/endorsement`, from a device session of a messaging device of the account added
/// before the authenticator `id`: its current signing key ID, the time and the endorsing device's signature.
public struct ApproverEndorsementRequest: Codable, Sendable {
    public var signingKeyId: String
    public var endorsedAt: Int64
    public var signature: Base64URL
    public init(signingKeyId: String, endorsedAt: Int64, signature: Base64URL) {
        self.signingKeyId = signingKeyId
        self.endorsedAt = endorsedAt
        self.signature = signature
    }
}

/// A device's key as a 409 `device-mismatch` names it.
public struct DeviceKeyRef: Codable, Equatable, Hashable, Sendable {
    public var username: String?
    public var deviceId: String?
    public var encryptionKeyId: String
    public init(username: String?, deviceId: String?, encryptionKeyId: String) {
        self.username = username
        self.deviceId = deviceId
        self.encryptionKeyId = encryptionKeyId
    }
}

/// The token with which a browser whose key gate locked it out revokes its own device (docs/SPEC.md
/// §14.5): 32 random bytes; the server keeps only their SHA-256.
public struct DeviceRevocationToken: Codable, Equatable, Sendable {
    public var token: Base64URL
    public init(token: Base64URL) { self.token = token }
}

/// Setting a device's revocation token: the token, signed by that device's current signing key over
/// `DeviceProof.revocationTokenMessage` of the token's SHA-256 (docs/PROTOCOL.md §1).
public struct DeviceRevocationTokenSetting: Codable, Equatable, Sendable {
    public var token: Base64URL
    public var signature: Base64URL
    public init(token: Base64URL, signature: Base64URL) {
        self.token = token
        self.signature = signature
    }
}

/// Something the browser's key gate did, for the audit log (docs/SPEC.md §14).
public struct KeyGateEvent: Codable, Equatable, Sendable {
    /// `enabled`, `disabled`, `unlocked`, `unlock-failed`, `wiped`, `method-added` or `method-removed`.
    public var event: String
    /// `prf` (a passkey) or `password`.
    public var method: String
    public init(event: String, method: String) {
        self.event = event
        self.method = method
    }
}
