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
            String?
        @Option(
            name: .long,
            help: ArgumentHelp(
                "Pair by OpenID Connect instead of a key: sign in through this issuer in a browser (PingOne's pairing by OpenID Connect).",
                valueName: "issuer"
            )
        ) var oidc: String?
        @Option(
            name: .long,
            help: ArgumentHelp(
                "The public client registered for this app on the issuer (with --oidc).",
                valueName: "id"
            )
        ) var clientId: String?
        @Flag(name: .long, help: "With --oidc: pair without asking once the browser has allowed it.") var yes = false
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
            switch (key, oidc) {
            case (nil, nil):
                throw ValidationError("give a pairing key, or --oidc ISSUER --client-id ID to pair by OpenID Connect")
            case (_?, _?): throw ValidationError("a pairing key and --oidc exclude each other")
            case (nil, _?):
                if clientId == nil { throw ValidationError("--oidc needs --client-id: the app's client on the issuer") }
                if server != nil { throw ValidationError("--oidc names the server: drop --server") }
            case (_?, nil):
                if clientId != nil || yes { throw ValidationError("--client-id and --yes go with --oidc") }
            }
            if let oidc,
                URL(string: oidc).map({ ["http", "https"].contains($0.scheme ?? "") && $0.host != nil }) != true
            {
                throw ValidationError("--oidc must be the issuer's http:// or https:// URL, not \(oidc)")
            }
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
            let isURI = key?.contains("://") == true
            let serverText =
                try server ?? ProcessInfo.processInfo.environment["COUNTERSIGN_SERVER"] ?? SessionFile.load()?.server
            guard isURI || oidc != nil || serverText != nil else {
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
                if let oidc, let clientId {
                    guard
                        let paired = try await Self.pairByOIDC(
                            oidc,
                            clientID: clientId,
                            name: deviceName,
                            identity: identity,
                            yes: yes
                        )
                    else {
                        PrivateFiles.remove(PrivateFiles.config.appendingPathComponent(keyFile))
                        Terminal.warn("not paired: the pairing grant is declined and spent")
                        throw ExitCode(1)
                    }
                    (authenticator, info) = paired
                } else {
                    (authenticator, info) = try await CountersignAuthenticator.pair(
                        key ?? "",
                        server: serverText.flatMap(URL.init(string:)),
                        name: deviceName,
                        identity: identity
                    )
                }
            } catch let exit as ExitCode {
                throw exit
            } catch {
                PrivateFiles.remove(PrivateFiles.config.appendingPathComponent(keyFile))
                switch error {
                case let e as OIDCPairingError: throw CLIError.usage("pairing by OpenID Connect failed: \(e)")
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

        /// PingOne's pairing by OpenID Connect as a native app (RFC 8252): a mobile payload for `identity`, the
        /// authorization in a browser with a loopback redirect, the ID token checked, then paired once the
        /// person says so here (or `yes`); nil when they declined (the grant is spent).
        static func pairByOIDC(
            _ issuer: String,
            clientID: String,
            name: String,
            identity: Identity,
            yes: Bool
        ) async throws -> (CountersignAuthenticator, PairingInfo)? {
            let provider = try await OIDCProvider.discover(issuer)
            let payload = try CountersignAuthenticator.generateMobilePayload(identity: identity)
            let flow = try await OIDCNativeAuthorization.start(
                provider: provider,
                clientID: clientID,
                extra: ["mobilePayload": payload]
            )
            Terminal.warn("open this URL in a browser signed in to \(provider.issuer), and allow the pairing:")
            print(flow.url.absoluteString)
            fflush(nil)
            Terminal.warn("waiting for the browser (at most \(Int(MobilePayload.lifetime / 60)) minutes)…")
            let tokens = try await flow.tokens(timeout: .seconds(Int64(MobilePayload.lifetime)))
            guard let idToken = tokens.id_token else {
                throw OIDCPairingError.idToken("the token endpoint sent no ID token")
            }
            let pairing = try await CountersignAuthenticator.processIdToken(
                idToken,
                provider: provider,
                clientID: clientID,
                nonce: flow.nonce,
                payload: payload,
                identity: identity,
                name: name
            )
            let question = """
                Pair this directory as authenticator "\(Terminal.printable(name))" of \(Terminal.printable(pairing.username)) on \(pairing.server.absoluteString) \
                (key fingerprint \(pairing.fingerprint))?
                """
            let approved: Bool
            if yes {
                approved = true
            } else {
                guard isatty(0) == 1 else {
                    try? await pairing.deny()
                    throw CLIError.usage(
                        "not at a terminal to confirm the pairing: pass --yes (the grant is spent; start again)"
                    )
                }
                print("\(question) Type yes to pair: ", terminator: "")
                fflush(nil)
                approved = (Swift.readLine() ?? "").trimmingCharacters(in: .whitespaces).lowercased() == "yes"
            }
            guard approved else {
                try await pairing.deny()
                return nil
            }
            return try await pairing.approve()
        }
    }
}
