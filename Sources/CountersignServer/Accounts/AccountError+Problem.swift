import CountersignAPI
import Foundation
import Hummingbird

/// How the accounts feature's refusals read as problems.
extension Problem {
    /// `now` is the server's clock, for `Retry-After`.
    init(_ error: AccountError, now: Date) {
        let iso = ISO8601DateFormatter()
        switch error {
        case .usernameTaken:
            self.init(
                status: .conflict,
                code: .usernameTaken,
                title: "Username taken",
                detail: "That username is already registered; choose another."
            )
        case .captchaRequired:
            self.init(
                status: .badRequest,
                code: .captchaRequired,
                title: "Captcha required",
                detail: "Solve a challenge from GET /v1/captcha and send the solution as the captcha field."
            )
        case .captchaInvalid(let why):
            self.init(
                status: .badRequest,
                code: .captchaInvalid,
                title: "Captcha invalid",
                detail: "\(why); fetch a new challenge from GET /v1/captcha."
            )
        case .invalidCredentials(let until, let locked):
            var extra: [String: ProblemValue] = [:]
            var detail = "The username or password is wrong."
            if locked {
                extra["locked"] = .bool(true)
                detail += " Too many failures: the account is now locked until an administrator unlocks it."
            } else if let until {
                extra["retryAt"] = .string(WireDate.format(until))
                detail += " Too many failures: sign-in is refused until \(iso.string(from: until))."
            }
            self.init(
                status: .unauthorized,
                code: .invalidCredentials,
                title: "Invalid credentials",
                detail: detail,
                extra: extra
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
        case .wrongPassword:
            self.init(
                status: .forbidden,
                code: .wrongPassword,
                title: "Wrong password",
                detail: "The current password is wrong."
            )
        }
    }
}
