import ArgumentParser
import CountersignClient
import Foundation

extension AuthenticatorCommand {
    struct Push: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Turn push approvals for this authenticator on or off (off: sign-in offers passcodes only)."
        )
        @Argument(help: "on or off") var setting: String
        @OptionGroup var keyOptions: PrivateKeyOptions

        func validate() throws {
            guard ["on", "off"].contains(setting.lowercased()) else {
                throw ValidationError("say on or off, not \(setting)")
            }
        }

        func run() async throws {
            let context = try AuthenticatorContext(keyOptions: keyOptions)
            let on = setting.lowercased() == "on"
            try await AuthenticatorCommand.run(context) { try await context.authenticator.allowPushNotifications(on) }
            AuthenticatorLog.append("push \(on ? "on" : "off")")
            print(
                Terminal.printable("push approvals \(on ? "on" : "off") for this authenticator (\(context.username))")
            )
        }
    }
}
