import CountersignAPI
import Hummingbird

/// How the accounts feature's refusals read as problems.
extension Problem {
    init(_ error: AccountError) {
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
