import Foundation

/// A device session as stored (opened by the device signing a nonce): the SHA-256 of its token.
public struct DeviceSessionRecord: Equatable, Sendable {
    public var tokenHash: String
    public var deviceID: String
    public var accountID: String
    public var createdAt: Date
    public var lastUsedAt: Date
    public var expiresAt: Date
}
