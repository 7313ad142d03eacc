/// Why a request's session was refused. Closed: the HTTP edge maps each case to one problem type
/// (`SessionError+Problem.swift`; docs/openapi.yaml lists them); nothing here knows about HTTP.
public enum SessionError: Error, Equatable, Sendable {
    /// No account session token, or one that is unknown, expired or idle too long.
    case noAccountSession
    /// No device session token (`csd_…`), or one that is unknown, expired, idle too long, or of a
    /// revoked device.
    case noDeviceSession
    /// The device session is an authenticator's: it approves sign-ins and holds no mail, so the
    /// messaging routes refuse it.
    case notAMessagingDevice
    /// The operation needs a full authentication within the account's re-authentication interval.
    case reauthenticationRequired(intervalMinutes: Int)
}
