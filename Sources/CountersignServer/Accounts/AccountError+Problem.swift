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
        }
    }
}
