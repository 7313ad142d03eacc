import ArgumentParser
import CountersignClient
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension AuthenticatorCommand {
    struct Auth: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Claim a QR sign-in code (its 8 characters or its URI) and approve or deny it; prints the status.",
            discussion: """
                Prints CLAIMED, COMPLETED, DENIED or EXPIRED alone on its line. Without --approve or --deny, on a terminal you are \
                asked; otherwise the code is only claimed (no other authenticator can take it).
                """
        )
        @Argument(help: "The code the sign-in screen shows, or its countersign://auth URI.") var code: String
        @Option(name: .long, help: ArgumentHelp("Approve for this user (username or user ID).", valueName: "user"))
        var approve: String?
        @Flag(name: .long, help: "Deny the sign-in.") var deny = false
        @OptionGroup var keyOptions: PrivateKeyOptions

        func validate() throws {
            if approve != nil, deny { throw ValidationError("--approve and --deny exclude each other") }
        }

        func run() async throws {
            let context = try AuthenticatorContext(keyOptions: keyOptions)
            let session = try await AuthenticatorCommand.run(context) {
                try await context.authenticator.authenticate(authCode: code)
            }
            let c = session.object.clientContext
            Terminal.warn(
                """
                sign-in request from \(Terminal.printable(c.address)) (\(Terminal.printable(c.userAgent))) at \(PrivateFiles.date(c.time)) \
                for \(session.users.map { "\(Terminal.printable($0.username)) (\(Terminal.printable($0.given)) \(Terminal.printable($0.family)))" }.joined(separator: ", "))
                """
            )
            AuthenticatorLog.append("claimed an authentication code: \(session.status)")
            var status = session.status
            var user = approve
            var denying = deny
            if status == "CLAIMED", user == nil, !denying, isatty(0) == 1 {
                print(
                    "Approve for \(Terminal.printable(session.users.map(\.username).joined(separator: " / "))) (type the username), d to deny: ",
                    terminator: ""
                )
                fflush(nil)
                let line = (Swift.readLine() ?? "").trimmingCharacters(in: .whitespaces)
                if line.lowercased() == "d" { denying = true } else if !line.isEmpty { user = line }
            }
            if status == "CLAIMED", let user {
                guard let chosen = session.users.first(where: { $0.username == user.lowercased() || $0.userId == user })
                else {
                    throw ValidationError(
                        "\(Terminal.printable(user)) is not among this authenticator's users (\(session.users.map(\.username).joined(separator: ", "))); the code stays claimed"
                    )
                }
                status = try await AuthenticatorCommand.run(context) {
                    try await session.approve(userId: chosen.userId)
                }
                AuthenticatorLog.append("approved the authentication code for \(chosen.username): \(status)")
            } else if status == "CLAIMED", denying {
                status = try await AuthenticatorCommand.run(context) { try await session.deny() }
                AuthenticatorLog.append("denied the authentication code: \(status)")
            }
            print(Terminal.printable(status))
            let wanted: Set<String> = user != nil ? ["COMPLETED"] : denying ? ["DENIED"] : ["CLAIMED", "COMPLETED"]
            if !wanted.contains(status) { throw ExitCode(1) }
        }
    }
}
