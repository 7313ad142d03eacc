import CountersignAPI
import Foundation
import Hummingbird

/// How the sign-in's refusals read as problems.
extension Problem {
    init(_ error: SignInError) {
        let iso = ISO8601DateFormatter()
        switch error {
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
        case .wrongPassword:
            self.init(
                status: .forbidden,
                code: .wrongPassword,
                title: "Wrong password",
                detail: "The current password is wrong."
            )
        case .superseded:
            self = .signInSuperseded
        }
    }
}
