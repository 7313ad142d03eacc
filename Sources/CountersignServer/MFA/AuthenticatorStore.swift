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

/// The storage of paired authenticators (stored by `PairingStore.pair`): their push setting, their last
/// passcode step, the logs they upload.
public protocol AuthenticatorStore: Sendable {
    /// The account's authenticators whose device is still active (revoking the device unpairs it).
    func authenticators(accountID: String) async throws -> [AuthenticatorRecord]
    func authenticator(deviceID: String) async throws -> AuthenticatorRecord?
    func setPushAllowed(deviceID: String, _ allowed: Bool) async throws
    /// Records `step` as the authenticator's last accepted passcode step if it is later than the stored
    /// one; false when it is not (a replayed code, or a concurrent use of the same one).
    func advanceStep(deviceID: String, to step: UInt64) async throws -> Bool
    /// Removes the account's authenticator records and returns their devices (to revoke).
    func removeAuthenticators(accountID: String) async throws -> [String]
    func addLog(supportID: String, deviceID: String, accountID: String, at: Date, text: String) async throws
}
