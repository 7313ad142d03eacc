import ArgumentParser
import CountersignClient
import Foundation

extension AuthenticatorCommand {
    struct Deny: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Deny a sign-in request; prints the status (FAILED).")
        @Argument(help: "The request's ID (see `countersign authenticator pending`), or a unique prefix of it.") var id:
            String
        @Flag(
            name: .long,
            help:
                "Report it as \"this wasn't me\": push approval is suspended for the account until it signs in with a code."
        )
        var report = false
        @OptionGroup var keyOptions: PrivateKeyOptions

        func run() async throws {
            let context = try AuthenticatorContext(keyOptions: keyOptions)
            let n = try await AuthenticatorCommand.notification(context, id: id)
            let status = try await AuthenticatorCommand.answer(context, n, what: report ? "deny (reported)" : "deny") {
                try await n.deny(report: report)
            }
            print(Terminal.printable(status))
        }
    }
}
