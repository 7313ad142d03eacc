/// Why a binding or a resumption was refused (docs/PROTOCOL.md §1.1). Closed: the HTTP edge maps each
/// case to one problem type (`SessionBindingError+Problem.swift`; docs/openapi.yaml lists them).
public enum SessionBindingError: Error, Equatable, Sendable {
    /// The server keeps no browser signed in (`COUNTERSIGN_STAY_SIGNED_IN_DAYS=0`).
    case off
    /// The binding's signature does not verify with the key it names.
    case badSignature
    /// `deviceId` is not an active messaging device of the account whose signing key is the key given.
    case notThisDevice
    /// The session is too old to bind: only one that just signed in (or fully re-authenticated) may.
    case tooLate
    /// The resumption's nonce is unknown, spent, expired or for another binding.
    case challengeInvalid
    /// No such binding, a wrong key, or one that ended: signed out, idle too long, a password change, a
    /// lock, a removed passkey or its device revoked. Said the same way for each: the route is anonymous.
    case ended
}
