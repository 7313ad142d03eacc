import CountersignAPI
import Foundation
import Hummingbird

/// How the lockout gate's refusals read as problems.
extension Problem {
    /// `now` is the server's clock, for `Retry-After`.
    init(_ error: SignInRefusal, now: Date) {
        let iso = ISO8601DateFormatter()
        switch error {
        case .delayed(let until):
            self.init(
                status: .tooManyRequests,
                code: .signInDelayed,
                title: "Sign-in delayed",
                detail: "Too many failed sign-ins; try again after \(iso.string(from: until)).",
                extra: ["retryAt": .string(WireDate.format(until))]
            )
            headers[.retryAfter] = "\(max(1, Int(until.timeIntervalSince(now).rounded(.up))))"
        case .locked:
            self.init(
                status: .init(code: 423, reasonPhrase: "Locked"),
                code: .accountLocked,
                title: "Account locked",
                detail: "Too many failed sign-ins; an administrator must unlock the account."
            )
        case .busy:
            self.init(
                status: .tooManyRequests,
                code: .signInBusy,
                title: "Sign-in busy",
                detail: "Other sign-ins for this username are being checked; retry in a second."
            )
            headers[.retryAfter] = "1"
        }
    }
}
