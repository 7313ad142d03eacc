import CountersignAPI
import Hummingbird

/// How the captcha's refusals read as problems.
extension Problem {
    init(_ error: CaptchaError) {
        switch error {
        case .required:
            self.init(
                status: .badRequest,
                code: .captchaRequired,
                title: "Captcha required",
                detail: "Solve a challenge from GET /v1/captcha and send the solution as the captcha field."
            )
        case .invalid(let why):
            self.init(
                status: .badRequest,
                code: .captchaInvalid,
                title: "Captcha invalid",
                detail: "\(why); fetch a new challenge from GET /v1/captcha."
            )
        }
    }
}
