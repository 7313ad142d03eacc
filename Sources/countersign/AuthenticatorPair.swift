import ArgumentParser
import CountersignClient
import CountersignCrypto
import Foundation

extension AuthenticatorCommand {
    struct Pair: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Pair this config directory as an authenticator, with a pairing key or its countersign://pair URI.",
            discussion: "Prints the pairing's statuses (push, oneTimePasscode) and the account's username."
        )
        @Argument(help: "The pairing key (ABCD-EFGH-JKMN) or its countersign://pair?key=…&server=… URI.") var key:
            String
        @Option(
            help: ArgumentHelp(
                "This authenticator's name, 1 to 64 characters (default: the host name).",
                valueName: "name"
            )
        ) var name: String?
        @Option(
            help: ArgumentHelp(
                "The server, for a bare key (default: $COUNTERSIGN_SERVER, else the signed-in one).",
                valueName: "url"
            )
        )
        var server: String?
        @Option(
            name: .long,
            help: ArgumentHelp("Read the new key's passphrase from the first line of this file.", valueName: "file")
        )
        var passphraseFile: String?
        @Flag(name: .long, help: "Store the authenticator's key unencrypted.") var noPassphrase = false

        func validate() throws {
            if noPassphrase, passphraseFile != nil {
                throw ValidationError("--no-passphrase and --passphrase-file exclude each other")
            }
            if let name, !(1...64).contains(name.trimmingCharacters(in: .whitespaces).unicodeScalars.count) {
                throw ValidationError("--name takes 1 to 64 characters")
            }
            if let server,
                URL(string: server).map({ ["http", "https"].contains($0.scheme ?? "") && $0.host != nil }) != true
            {
                throw ValidationError("--server must be an http:// or https:// URL, not \(server)")
            }
        }

        func run() async throws {
            if let device = DeviceFile.loadQuietly() {
                throw CLIError.usage(
                    """
                    \(PrivateFiles.config.path) already is device \(device.deviceId) of \(device.username) (device.json); a config directory \
                    holds one identity: pair the authenticator in a directory of its own (COUNTERSIGN_CONFIG_DIR=DIR countersign authenticator pair …)
                    """
                )
            }
            if FileManager.default.fileExists(atPath: PrivateFiles.deviceURL.path) {
                throw CLIError.usage(
                    "\(PrivateFiles.config.path) holds a device (device.json); pair the authenticator in a config directory of its own"
                )
            }
            if let existing = try AuthenticatorFile.load() {
                throw CLIError.usage(
                    """
                    \(PrivateFiles.config.path) already is authenticator \(existing.state.deviceId) ("\(Terminal.printable(existing.name))") of \
                    \(existing.state.username); pair another in a config directory of its own (COUNTERSIGN_CONFIG_DIR=DIR), or move \
                    \(AuthenticatorFile.url.path) away to replace it
                    """
                )
            }
            let isURI = key.contains("://")
            let serverText =
                try server ?? ProcessInfo.processInfo.environment["COUNTERSIGN_SERVER"] ?? SessionFile.load()?.server
            guard isURI || serverText != nil else {
                throw ValidationError(
                    "name the server with --server URL, or pass the pairing URI (countersign://pair?key=…&server=…)"
                )
            }
            let deviceName = (name ?? DeviceContext.hostName()).trimmingCharacters(in: .whitespaces)
            let passphrase = try Terminal.newPassphrase(
                file: passphraseFile,
                none: noPassphrase,
                prompt: "New passphrase for this authenticator's key: ",
                what: "the authenticator's key",
                unchanged: "nothing was changed"
            )
            let identity = Identity.generate()
            let keyFile = try DeviceKeys.keyring.store(identity, passphrase: passphrase)
            let authenticator: CountersignAuthenticator
            let info: PairingInfo
            do {
                (authenticator, info) = try await CountersignAuthenticator.pair(
                    key,
                    server: serverText.flatMap(URL.init(string:)),
                    name: deviceName,
                    identity: identity
                )
            } catch {
                PrivateFiles.remove(PrivateFiles.config.appendingPathComponent(keyFile))
                switch error {
                case PingOneError.pairingKey:
                    throw CLIError.usage(
                        "the pairing key is wrong, used or expired (PingOne 10005 pairingKey); make a new one with `countersign account mfa pairing-key`"
                    )
                case let e as PingOneError: throw CLIError.usage("pairing failed: \(e)")
                default: throw error
                }
            }
            let file = AuthenticatorFile(
                state: authenticator.state,
                name: deviceName,
                keyFile: keyFile,
                pairedAt: Date()
            )
            try file.save()
            AuthenticatorLog.append(
                "paired as \(info.deviceId) (\(deviceName)) for \(info.username) on \(authenticator.state.server)"
            )
            for a in info.authenticators {
                print(Terminal.printable("\(a.type): \(a.status)" + (a.errorMessage.map { " (\($0))" } ?? "")))
            }
            print(Terminal.printable("username: \(info.username)"))
            Terminal.warn(
                """
                paired authenticator \(Terminal.printable(info.deviceId)) ("\(Terminal.printable(deviceName))") for \(Terminal.printable(info.username)) on \(authenticator.state.server); \
                key \(PrivateFiles.config.appendingPathComponent(keyFile).path), fingerprint \(identity.publicKey.fingerprint)
                """
            )
        }
    }
}
