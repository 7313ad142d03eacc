import Foundation

/// Why a sign-in, re-authentication or password check was refused, besides the lockout gate's
/// refusals (`SignInRefusal`). Closed: `SignInError+Problem.swift` maps each case to one problem type.
public enum SignInError: Error, Equatable, Sendable {
    /// Wrong username or password (never which). `delayedUntil`/`locked` tell what this failure caused;
    /// `oneMoreLocks`, that the next failure locks the account.
    case invalidCredentials(delayedUntil: Date?, locked: Bool, oneMoreLocks: Bool = false)
    /// The current password given to a password change or re-authentication is wrong.
    case wrongPassword
    /// The password changed after this sign-in or re-authentication began: it gives no session.
    case superseded
}
