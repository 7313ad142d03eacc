/// What ended: every session of an account (sign-out-everywhere, password change, lock), one device
/// (revoked), or one device session (signed out, expired). `SessionService` tells whoever it was given
/// at construction (the push channel's connections, on every node), the moment the database says so, so
/// that nothing keeps flowing to a revoked device.
public enum SessionEnding: Sendable, Equatable {
    case account(String)
    case device(String)
    case deviceSession(tokenHash: String)
    /// Every session of the device but one (its keys were rotated from that one).
    case otherDeviceSessions(deviceID: String, keeping: String)
}
