import Foundation

/// A key a browser bound to its account session (docs/PROTOCOL.md §1.1), as stored. A signature by the key
/// (or, for a device binding, by the device's current signing key) resumes the session after a reload.
public struct SessionBindingRecord: Equatable, Sendable {
    public var id: String
    public var accountID: String
    /// SPKI DER of the bound key: the browser's own binding key, or the device's signing key when bound.
    public var publicKey: [UInt8]
    /// The messaging device whose signing key this is: the binding then lasts as long as the device.
    public var deviceID: String?
    public var createdAt: Date
    public var lastUsedAt: Date
    /// The last full authentication of a session bound to it: resumed sessions carry it, so the
    /// re-authentication interval counts from the password, not from the reload.
    public var authenticatedAt: Date
    /// The passkey the bound session signed in with: removing the passkey ends the binding.
    public var passkeyID: String?
    /// How the bound session was authenticated (RFC 8176 `amr` values): resumed sessions carry them.
    public var methods: [String] = SessionMethods.passwordOnly
}
