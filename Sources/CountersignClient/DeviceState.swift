import CountersignCrypto
import Foundation

/// A device's own record: which account and server it belongs to, its ID, and its key files (relative
/// to where its store keeps them; the CLI's `device.json`). Rules for its keys:
/// - A rotation is recorded in two steps: the new key is `pending` before the server is asked (the
///   server may take it even if its answer is lost), and becomes current, the old one kept in
///   `oldKeyFiles` so messages sealed to it still open, once the server took it.
/// - A revoked device keeps its record, marked, so the messages and keys kept still open offline.
public struct DeviceState: Codable, Equatable, Sendable {
    public var server: String
    public var username: String
    public var deviceId: String
    public var name: String
    /// The current key: `keys/<key ID in hex>.key`, one P-256 identity for signing and encryption.
    public var keyFile: String
    /// Keys this device had before rotations, kept so that messages sealed to them still open.
    public var oldKeyFiles: [String]
    /// Set while a rotation is in flight: the new key, which the server may already have accepted.
    public var pendingKeyFile: String?
    public var createdAt: Date
    /// When this device learnt that the server revoked it.
    public var revokedAt: Date?

    public init(
        server: String,
        username: String,
        deviceId: String,
        name: String,
        keyFile: String,
        oldKeyFiles: [String] = [],
        pendingKeyFile: String? = nil,
        createdAt: Date,
        revokedAt: Date? = nil
    ) {
        self.server = server
        self.username = username
        self.deviceId = deviceId
        self.name = name
        self.keyFile = keyFile
        self.oldKeyFiles = oldKeyFiles
        self.pendingKeyFile = pendingKeyFile
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }

    /// The current key's ID in hex, from its file name (`keys/<key ID>.key`).
    public var keyID: String { String((keyFile as NSString).lastPathComponent.dropLast(4)) }

    /// The key files this device signed and was sealed to: the current one and those rotated away (never
    /// a pending one, nor any other file that happens to lie in the keyring).
    public var keyFiles: [String] { [keyFile] + oldKeyFiles }

    /// The keys a device session may be opened with, in order: the current one, then a pending one
    /// (the server may have taken a rotation whose answer was lost).
    public var sessionKeyFiles: [String] { [keyFile] + (pendingKeyFile.map { [$0] } ?? []) }

    /// Before the server is asked to rotate to `newKeyFile`.
    public func beginningRotation(to newKeyFile: String) -> DeviceState {
        var next = self
        next.pendingKeyFile = newKeyFile
        return next
    }

    /// The server took `newKeyFile`: it is current, the old key is kept.
    public func finishingRotation(to newKeyFile: String) -> DeviceState {
        var next = self
        next.oldKeyFiles.append(next.keyFile)
        next.keyFile = newKeyFile
        next.pendingKeyFile = nil
        return next
    }

    /// The server refused the rotation: the old key stays current.
    public func abandoningRotation() -> DeviceState {
        var next = self
        next.pendingKeyFile = nil
        return next
    }

    /// Marked revoked (the first time it was found, kept).
    public func markedRevoked(now: Date) -> DeviceState {
        var next = self
        next.revokedAt = revokedAt ?? now
        return next
    }
}

/// A device session as kept (the CLI's `device-session.json`, 0600): the bearer token message calls carry.
public struct StoredDeviceSession: Codable, Equatable, Sendable {
    public var deviceId: String
    public var token: String
    public var expiresAt: Date

    public init(deviceId: String, token: String, expiresAt: Date) {
        self.deviceId = deviceId
        self.token = token
        self.expiresAt = expiresAt
    }

    /// Usable by `device` at `now`: its own and not expired.
    public func isUsable(by device: DeviceState, now: Date) -> Bool { deviceId == device.deviceId && expiresAt > now }
}

/// Where a device keeps its record and its device session.
public protocol DeviceStateStore: Sendable {
    /// The device kept here, nil when none; one that is there but cannot be read throws.
    func loadDevice() throws -> DeviceState?
    func saveDevice(_ device: DeviceState) throws
    func removeDevice()
    /// The device session kept here, nil when none.
    func loadDeviceSession() throws -> StoredDeviceSession?
    func saveDeviceSession(_ session: StoredDeviceSession) throws
    func removeDeviceSession()
}
