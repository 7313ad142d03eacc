import ArgumentParser
import CountersignClient
import Foundation

extension AuthenticatorCommand {
    struct Pending: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the sign-in requests waiting for this authenticator's answer."
        )
        @Flag(
            name: .long,
            help: "Print one JSON array (id, user, address, userAgent, time, numberMatchingType, options, expiresAt)."
        )
        var json = false
        @OptionGroup var keyOptions: PrivateKeyOptions

        func run() async throws {
            let context = try AuthenticatorContext(keyOptions: keyOptions)
            let pending = try await AuthenticatorCommand.run(context) {
                try await context.authenticator.pendingNotifications()
            }
            if json {
                try Terminal.printJSON(pending.map(AuthenticatorCommand.jsonObject), pretty: false)
            } else if pending.isEmpty {
                print("no sign-in requests waiting")
            } else {
                for n in pending { print(Terminal.printable(AuthenticatorCommand.describe(n))) }
            }
        }
    }
}
