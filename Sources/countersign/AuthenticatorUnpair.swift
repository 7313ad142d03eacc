import ArgumentParser
import CountersignClient
import Foundation

extension AuthenticatorCommand {
    struct Unpair: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Unpair this authenticator from its account and remove it from this config directory.",
            discussion: """
                The server revokes it (its sessions and push connection end); then authenticator.json and its key are deleted \
                here, and the directory can be paired again. Refused while it is the account's only second factor: pair \
                another authenticator or add an authenticator app first, or turn multi-factor sign-in off from the account \
                (`countersign account mfa disable`).
                """
        )
        @OptionGroup var keyOptions: PrivateKeyOptions

        func run() async throws {
            let context = try AuthenticatorContext(keyOptions: keyOptions)
            let f = context.file
            do {
                try await AuthenticatorCommand.run(context) { try await context.authenticator.unpair() }
            } catch let e as ClientError where e.code == .lastSecondFactor {
                throw CLIError.usage(
                    """
                    this authenticator is \(f.state.username)'s only second factor, so unpairing it would leave the password alone; \
                    pair another authenticator or add an authenticator app first, or turn multi-factor sign-in off from the account \
                    (`countersign account mfa disable`). Nothing was changed
                    """
                )
            }
            AuthenticatorFile.remove()
            PrivateFiles.remove(PrivateFiles.config.appendingPathComponent(f.keyFile))
            AuthenticatorLog.append("unpaired \(f.state.deviceId) from \(f.state.username)")
            print(
                Terminal.printable(
                    "unpaired authenticator \(f.state.deviceId) (\"\(f.name)\") from \(f.state.username); its state and key are removed here"
                )
            )
        }
    }
}
