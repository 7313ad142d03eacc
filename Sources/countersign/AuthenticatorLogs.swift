import ArgumentParser
import CountersignClient
import Foundation

extension AuthenticatorCommand {
    struct Logs: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Support logs.", subcommands: [Send.self])

        struct Send: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract:
                    "Send this authenticator's recent log lines to the server (credentials masked); prints the support ID."
            )
            @OptionGroup var keyOptions: PrivateKeyOptions

            func run() async throws {
                let context = try AuthenticatorContext(keyOptions: keyOptions)
                var lines = AuthenticatorLog.lines().suffix(200).map { $0 }
                if lines.isEmpty {
                    let f = context.file
                    lines = [
                        "countersign \(Countersign.configuration.version): authenticator \(f.state.deviceId) (\(f.name)) for \(f.state.username) "
                            + "on \(f.state.server), paired \(PrivateFiles.date(f.pairedAt)); no log lines yet"
                    ]
                }
                let id = try await AuthenticatorCommand.run(context) { try await context.authenticator.sendLogs(lines) }
                AuthenticatorLog.append("sent logs: support id \(id)")
                print(Terminal.printable(id))
            }
        }
    }
}
