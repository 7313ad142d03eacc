import ArgumentParser
import CountersignAPI
import CountersignClient
import CountersignCrypto
import Foundation

/// `countersign authenticator approve-device`: the paired authenticator links a new device of the account
/// (docs/PROTOCOL.md §1.2), once a device of the account endorsed it (`countersign device endorse`).
extension AuthenticatorCommand {
    struct ApproveDevice: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "approve-device",
            abstract: "Approve a new device of your account after comparing its link code.",
            discussion: """
                As `countersign device approve`, from this authenticator: lists the devices of your account added \
                after it that no device approved yet, shows each one's name, fingerprint and link code, and asks \
                "Is this your new device?". Only an authenticator a device of the account endorsed may approve \
                (`countersign device endorse`, comparing the code `countersign authenticator status` shows). Not at \
                a terminal, pass --code with the code the new device shows, and --yes.
                """
        )
        @Argument(help: "The new device's ID; default: the one waiting.") var deviceID: String?
        @Option(name: .long, help: "The link code the new device shows; only a device with this code is approved.")
        var code: String?
        @Flag(name: .long, help: "Approve without asking (requires --code).") var yes = false
        @OptionGroup var keyOptions: PrivateKeyOptions

        func validate() throws { try DeviceCommand.validate(code: code, yes: yes, what: "the new device") }

        func run() async throws {
            let context = try AuthenticatorContext(keyOptions: keyOptions)
            let me = context.file.state.deviceId
            let directory = try await AuthenticatorCommand.run(context) { try await context.authenticator.directory() }
            guard CountersignAuthenticator.endorsement(in: directory, of: me) != nil else {
                throw CLIError.usage(
                    "this authenticator may not approve devices yet: on a device of \(context.username), run "
                        + "`countersign device endorse --code \"\(context.authenticator.approverCode)\"` (the code "
                        + "`countersign authenticator status` shows), or open Settings, Devices in the web client"
                )
            }
            guard
                let target = try DeviceCommand.chooseWaiting(
                    in: directory,
                    seenBy: me,
                    deviceID: deviceID,
                    code: code,
                    nothing: "no device of \(context.username) added after this authenticator is waiting to be linked",
                    nameOne: "countersign authenticator approve-device DEVICE-ID"
                )
            else { return }
            print("Is this your new device?")
            print(
                "  name:        \"\(Terminal.printable(target.name))\" (\(target.id)), added \(PrivateFiles.date(target.createdAt))"
            )
            print("  fingerprint: \(KeyPins.fingerprint(hex: KeyPins.keyID(spki: target.signingKey.bytes) ?? ""))")
            print("  link code:   \(CountersignClient.linkCode(of: target) ?? "?")")
            guard
                try DeviceCommand.confirm(
                    yes: yes && code != nil,
                    "Approve it only if the new device shows this code.",
                    what: "the new device"
                )
            else {
                print("not approved")
                return
            }
            _ = try await AuthenticatorCommand.run(context) { try await context.authenticator.vouchDevice(target) }
            AuthenticatorLog.append("approved the new device \(target.id)")
            print(
                "approved \"\(Terminal.printable(target.name))\": your contacts accept it without a warning, as a device your own devices approved"
            )
        }
    }
}
