import CountersignAPI
import Hummingbird

/// How the sessions feature's refusals read as problems.
extension Problem {
    init(_ error: SessionError) {
        switch error {
        case .noAccountSession:
            self = Problem(RequestError.unauthenticated)
        case .noDeviceSession:
            self.init(
                status: .unauthorized,
                code: .unauthenticated,
                title: "No device session",
                detail:
                    "Send a device session token (csd_…) as `Authorization: Bearer …`; open one with POST /v1/device-sessions."
            )
            headers[.wwwAuthenticate] = "Bearer"
        case .notAMessagingDevice:
            self.init(
                status: .forbidden,
                code: .notAMessagingDevice,
                title: "Not a messaging device",
                detail:
                    "This device session is an authenticator's: it approves sign-ins and holds no mail. Send and read from a messaging device (countersign device init)."
            )
        case .reauthenticationRequired(let minutes):
            self.init(
                status: .unauthorized,
                code: .reauthenticationRequired,
                title: "Re-authentication required",
                detail:
                    "This operation needs a full authentication within the last \(minutes) minutes (the password, and the second factor if the account has one): POST /v1/sessions/current/reauth first.",
                extra: ["intervalMinutes": .int(minutes)]
            )
        }
    }
}
