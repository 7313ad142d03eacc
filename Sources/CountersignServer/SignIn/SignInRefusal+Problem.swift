import CountersignAPI
import Foundation
import Hummingbird

/// How the lockout gate's refusals read as problems.
extension Problem {
    /// `now` is the server's clock, for `Retry-After`; `contact`, whom a locked-out user asks.
    init(_ error: SignInRefusal, now: Date, contact: String?) {
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
                detail: "Too many failed sign-ins locked the account. \(Self.unlockBy(contact))",
                extra: contact.map { ["contact": .string($0)] } ?? [:]
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
