import ArgumentParser
import CountersignClient
import Foundation

extension AuthenticatorCommand {
    struct Approve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Approve a sign-in request with the number its sign-in screen shows; prints the status (COMPLETED or FAILED).",
            discussion: "A wrong number fails the sign-in (FAILED) and exits non-zero."
        )
        @Argument(help: "The request's ID (see `countersign authenticator pending`), or a unique prefix of it.") var id:
            String
        @Option(
            name: .long,
            help: ArgumentHelp(
                "The number shown on the sign-in screen (asked on the terminal when left out).",
                valueName: "n"
            )
        )
        var number: String?
        @OptionGroup var keyOptions: PrivateKeyOptions

        func run() async throws {
            let context = try AuthenticatorContext(keyOptions: keyOptions)
            let n = try await AuthenticatorCommand.notification(context, id: id)
            var picked = number?.trimmingCharacters(in: .whitespaces)
            // The numbers come in the server's challenge: escaped before they reach the terminal.
            let options = Terminal.printable(n.numberMatchingOptions.joined(separator: ", "))
            if picked == nil {
                let prompt =
                    n.numberMatchingType == "SELECT_NUMBER"
                    ? "Pick the number shown on the sign-in screen (\(options)): "
                    : "Number shown on the sign-in screen: "
                picked = String(
                    decoding: try Terminal.ask(prompt, what: "number to match", instead: "pass --number N"),
                    as: UTF8.self
                )
            }
            guard let picked, !picked.isEmpty else { throw ValidationError("no number given; nothing was answered") }
            if n.numberMatchingType == "SELECT_NUMBER", !n.numberMatchingOptions.contains(picked) {
                throw ValidationError(
                    "\(Terminal.printable(picked)) is not among this request's numbers (\(options)); nothing was answered"
                )
            }
            let status = try await AuthenticatorCommand.answer(context, n, what: "approve") {
                try await n.approve(numberMatchingPickedValue: picked)
            }
            print(Terminal.printable(status))
            if status != "COMPLETED" {
                Terminal.warn(
                    status == "FAILED"
                        ? "the number did not match: the sign-in failed"
                        : "the sign-in is \(Terminal.printable(status))"
                )
                throw ExitCode(1)
            }
        }
    }
}
