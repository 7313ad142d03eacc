import ArgumentParser
import CountersignClient
import Foundation

extension AuthenticatorCommand {
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Show this authenticator: whose it is, on which server, its key, and whether the server still has it paired."
        )
        @Flag(
            name: .long,
            help:
                "Print one JSON object (deviceId, name, username, server, pairedAt, pushAllowed, keyFile, fingerprint, approverCode, endorsedBy)."
        )
        var json = false
        @OptionGroup var keyOptions: PrivateKeyOptions

        func run() async throws {
            let context = try AuthenticatorContext(keyOptions: keyOptions)
            let info = try await AuthenticatorCommand.run(context) { try await context.authenticator.status() }
            let directory = try await AuthenticatorCommand.run(context) { try await context.authenticator.directory() }
            let endorsement = CountersignAuthenticator.endorsement(in: directory, of: info.deviceId)
            let endorser = endorsement.map { e in directory.devices.first { $0.id == e.deviceId }?.name ?? e.deviceId }
            let f = context.file
            if json {
                let object: [String: Any] = [
                    "deviceId": info.deviceId, "name": info.name, "username": f.state.username,
                    "server": f.state.server,
                    "pairedAt": PrivateFiles.date(info.pairedAt), "pushAllowed": info.pushAllowed,
                    "keyFile": context.file.keyPath,
                    "fingerprint": context.identity.publicKey.fingerprint.description,
                    "approverCode": context.authenticator.approverCode,
                    "endorsedBy": endorsement?.deviceId ?? NSNull(),
                ]
                try Terminal.printJSON(object)
                return
            }
            print(
                Terminal.printable(
                    "authenticator \(info.deviceId) (\"\(info.name)\") for \(f.state.username) on \(f.state.server)"
                )
            )
            print(
                Terminal.printable(
                    "paired \(PrivateFiles.date(info.pairedAt)); push approvals \(info.pushAllowed ? "on" : "off")"
                )
            )
            print(
                Terminal.printable(
                    "key \(context.file.keyPath), fingerprint \(context.identity.publicKey.fingerprint); passcode secret sealed to it"
                )
            )
            if let endorser {
                print(Terminal.printable("approves new devices (allowed by \"\(endorser)\")"))
            } else {
                print(
                    "approves no devices yet: to let it, run `countersign device endorse` on a device of the account "
                        + "(or Settings, Devices in the web client) and compare this code:"
                )
            }
            print("code \(context.authenticator.approverCode)")
        }
    }
}
