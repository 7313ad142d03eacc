import ArgumentParser
import CountersignClient
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension AuthenticatorCommand {
    struct OTP: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show this authenticator's passcode for `account login --otp`.",
            discussion: "On a terminal: a live countdown (Ctrl-C to stop). Otherwise one line: CODE SECONDS_LEFT."
        )
        @OptionGroup var keyOptions: PrivateKeyOptions

        func run() async throws {
            let context = try AuthenticatorContext(keyOptions: keyOptions)
            func current() throws -> (String, Int) {
                let now = Date()
                let info = try context.authenticator.oneTimePasscode(at: now)
                return (info.passcode, max(1, Int((info.validUntil - now.timeIntervalSince1970).rounded(.up))))
            }
            guard isatty(1) == 1 else {
                let (code, left) = try current()
                print("\(code) \(left)")
                return
            }
            AuthenticatorLog.append("showed passcodes")
            while true {
                let (code, left) = try current()
                print("\r\(code)  \(left)s \u{1b}[K", terminator: "")
                fflush(nil)
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }
}
