import CountersignAPI
import Foundation
import Hummingbird

/// How the sign-in's refusals read as problems.
extension Problem {
    /// `contact`: whom a locked-out user asks (`ServerConfiguration.adminContact`).
    init(_ error: SignInError, contact: String?) {
        let iso = ISO8601DateFormatter()
        switch error {
        case .invalidCredentials(let until, let locked, let oneMoreLocks):
            var extra: [String: ProblemValue] = [:]
            var detail = "The username or password is wrong."
            if locked {
                extra["locked"] = .bool(true)
                detail += " Too many failures: the account is now locked. \(Self.unlockBy(contact))"
                if let contact { extra["contact"] = .string(contact) }
            } else if let until {
                extra["retryAt"] = .string(WireDate.format(until))
                detail += " Too many failures: sign-in is refused until \(iso.string(from: until))."
            }
            if oneMoreLocks {
                extra["oneMoreLocks"] = .bool(true)
                detail += " One more failure locks the account."
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

    /// Who unlocks a locked account, as the end of a refusal's sentence.
    static func unlockBy(_ contact: String?) -> String {
        guard let contact else { return "An administrator must unlock it." }
        return "Ask \(contact) to unlock it."
    }
}
