import ArgumentParser
import CountersignClient
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension AuthenticatorCommand {
    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stay connected and answer each sign-in request as it arrives.",
            discussion: """
                On a terminal each request shows who asks (address, user agent, time) and asks for the number shown on the \
                sign-in screen (or to pick it among three), d to deny, r to deny and report "this wasn't me", or an empty line \
                to leave it. When standard input is not a terminal, one line is printed per request and nothing is answered \
                (answer with `authenticator approve ID --number N`).
                """
        )
        @OptionGroup var keyOptions: PrivateKeyOptions

        func run() async throws {
            let context = try AuthenticatorContext(keyOptions: keyOptions)
            try AccountCommand.refuseIPv6LiteralForPush(context.client.server)
            let interactive = isatty(0) == 1
            let box = UncheckedBox(context)
            let events = context.client.events(renewSession: { try await box.value.renewSession() }) { status in
                switch status {
                case .connecting: break
                case .connected:
                    Terminal.warn(
                        "connected; waiting for sign-in requests for \(Terminal.printable(box.value.username)) (Ctrl-C to stop)"
                    )
                case .disconnected(let reason, let wait):
                    Terminal.warn(
                        "disconnected (\(Terminal.printable(reason))); reconnecting in \(String(format: "%.1f", wait)) s"
                    )
                }
            }
            var seen = Set<String>()
            do {
                for try await event in events {
                    guard case .challenge(let jwt) = event else { continue }
                    guard let n = await context.authenticator.notification(from: jwt) else {
                        Terminal.warn(
                            "ignored a sign-in request that is not signed by this authenticator's server, not for it, or expired"
                        )
                        continue
                    }
                    guard seen.insert(n.transactionID).inserted else { continue }
                    print(
                        Terminal.printable(
                            (n.isReauthentication ? "Re-authentication request " : "Sign-in request ")
                                + AuthenticatorCommand.describe(n)
                        )
                    )
                    fflush(nil)
                    AuthenticatorLog.append(
                        "request \(n.transactionID) for \(n.username) from \(n.clientContext.address)"
                    )
                    if interactive {
                        await answer(context, n)
                    } else {
                        Terminal.warn(
                            "answer with: countersign authenticator approve \(Terminal.printable(n.transactionID)) --number N (or deny \(Terminal.printable(n.transactionID)) [--report])"
                        )
                    }
                }
            } catch let e as ClientError {
                throw CLIError.usage("\(e)")
            }
        }

        private func answer(_ context: AuthenticatorContext, _ n: NotificationObject) async {
            let prompt =
                n.numberMatchingType == "SELECT_NUMBER"
                ? "Pick the number shown on the sign-in screen (\(Terminal.printable(n.numberMatchingOptions.joined(separator: " / ")))), d to deny, r to report, Enter to skip: "
                : "Type the number shown on the sign-in screen, d to deny, r to report \"this wasn't me\", Enter to skip: "
            while true {
                print(prompt, terminator: "")
                fflush(nil)
                guard let line = await Self.readLine()?.trimmingCharacters(in: .whitespaces), !line.isEmpty else {
                    print("left unanswered")
                    return
                }
                do {
                    let status: String
                    switch line.lowercased() {
                    case "d":
                        status = try await AuthenticatorCommand.answer(context, n, what: "deny") {
                            try await n.deny(report: false)
                        }
                    case "r":
                        status = try await AuthenticatorCommand.answer(context, n, what: "deny (reported)") {
                            try await n.deny(report: true)
                        }
                    default:
                        if n.numberMatchingType == "SELECT_NUMBER", !n.numberMatchingOptions.contains(line) {
                            print(
                                "\(Terminal.printable(line)) is not one of \(Terminal.printable(n.numberMatchingOptions.joined(separator: ", ")))"
                            )
                            continue
                        }
                        status = try await AuthenticatorCommand.answer(context, n, what: "approve") {
                            try await n.approve(numberMatchingPickedValue: line)
                        }
                    }
                    print(Terminal.printable(status))
                } catch {
                    print(Terminal.printable("not answered: \(error)"))
                }
                fflush(nil)
                return
            }
        }

        /// A line from standard input on a thread of its own: the push channel keeps running meanwhile.
        static func readLine() async -> String? {
            await withCheckedContinuation { continuation in
                Thread { continuation.resume(returning: Swift.readLine()) }.start()
            }
        }
    }
}
