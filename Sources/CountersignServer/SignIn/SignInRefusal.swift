import Foundation

/// The lockout gate's refusals (docs/DESIGN.md, "Lockout"), whichever way a sign-in comes in: a password,
/// a passcode or recovery code, a passkey, a QR code, a device session of a locked account.
public enum SignInRefusal: Error, Equatable, Sendable {
    /// Refused without a check until `until`.
    case delayed(until: Date)
    /// Refused until an administrator unlocks the account.
    case locked
    /// Other checks for this username are in flight; retry in a second.
    case busy
}
