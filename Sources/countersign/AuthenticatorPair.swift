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
            if oidc != nil, !yes, isatty(0) != 1 {
                throw CLIError.usage(
                    "not at a terminal to confirm the pairing: pass --yes once you know the account and the server"
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
            // By OpenID Connect: the browser and the question first (minutes), the key written only then.
            var pairing: PairingObject?
            if let oidc, let clientId {
                do {
                    pairing = try await Self.oidcPairing(oidc, clientID: clientId, name: deviceName, identity: identity)
                } catch let e as OIDCPairingError {
                    throw CLIError.usage("pairing by OpenID Connect failed: \(e)")
                }
                if let pairing {
                    // Interrupted at the question: the grant is declined rather than left open for ten minutes.
                    let interrupt = Self.declineOnInterrupt(pairing)
                    defer { interrupt.cancel() }
                    if !(try Self.confirm(pairing, yes: yes)) {
                        try await pairing.deny()
                        Terminal.warn("not paired: you declined, and this pairing can no longer be used")
                        throw ExitCode(1)
                    }
                }
            }
            let keyFile = try DeviceKeys.keyring.store(identity, passphrase: passphrase)
            let authenticator: CountersignAuthenticator
            let info: PairingInfo
            do {
                if let pairing {
                    (authenticator, info) = try await pairing.approve()
                } else {
                    (authenticator, info) = try await CountersignAuthenticator.pair(
                        key ?? "",
                        server: serverText.flatMap(URL.init(string:)),
                        name: deviceName,
                        identity: identity
                    )
                }
            } catch {
                PrivateFiles.remove(PrivateFiles.config.appendingPathComponent(keyFile))
                switch error {
                case PingOneError.pairingKey where pairing != nil:
                    throw CLIError.usage("the pairing grant is used or expired (PingOne 10005 pairingKey); start again")
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
            if pairing != nil {
                Terminal.warn(
                    "sign-ins to \(Terminal.printable(info.username)) now ask this authenticator; keep a way back if you lose it: countersign account mfa recovery-codes"
                )
            }
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
        /// authorization in a browser with a loopback redirect, the ID token checked: what would be paired.
        static func oidcPairing(
            _ issuer: String,
            clientID: String,
            name: String,
            identity: Identity
        ) async throws -> PairingObject {
            let provider = try await OIDCProvider.discover(issuer)
            let payload = try CountersignAuthenticator.generateMobilePayload(
                identity: identity,
                issuer: provider.issuer,
                clientID: clientID
            )
            let flow = try await OIDCNativeAuthorization.start(
                provider: provider,
                clientID: clientID,
                extra: ["mobilePayload": payload]
            )
            Terminal.warn(
                """
                open this URL in a browser signed in to \(provider.issuer), and allow the pairing if the page shows \
                this key fingerprint: \(identity.publicKey.fingerprint)
                """
            )
            print(flow.url.absoluteString)
            fflush(nil)
            Terminal.warn(
                "waiting for the browser (at most \(Int(MobilePayload.lifetime / 60)) minutes; if the page shows an error, press Ctrl-C)…"
            )
            let tokens: OIDCTokenResponse
            do {
                tokens = try await flow.tokens(timeout: Duration.seconds(Int(MobilePayload.lifetime)))
            } catch ClientError.timedOut {
                throw CLIError.usage(
                    "the browser did not finish within \(Int(MobilePayload.lifetime / 60)) minutes; run the command again for a new link"
                )
            }
            guard let idToken = tokens.id_token else {
                throw OIDCPairingError.idToken("the token endpoint sent no ID token")
            }
            return try await CountersignAuthenticator.processIdToken(
                idToken,
                provider: provider,
                clientID: clientID,
                nonce: flow.nonce,
                payload: payload,
                identity: identity,
                name: name
            )
        }

        /// Until cancelled, SIGINT, SIGTERM and SIGHUP decline `pairing` (best effort) and exit 130.
        static func declineOnInterrupt(_ pairing: PairingObject) -> DispatchWorkItem {
            let sources = [SIGINT, SIGTERM, SIGHUP].map { signalNumber in
                signal(signalNumber, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
                source.setEventHandler {
                    let done = DispatchSemaphore(value: 0)
                    Task {
                        try? await pairing.deny()
                        done.signal()
                    }
                    _ = done.wait(timeout: .now() + 5)
                    Terminal.warn("\ninterrupted: not paired, and this pairing can no longer be used")
                    Foundation.exit(130)
                }
                source.resume()
                return (signalNumber, source)
            }
            return DispatchWorkItem {
                for (signalNumber, source) in sources {
                    source.cancel()
                    signal(signalNumber, SIG_DFL)
                }
            }
        }

        /// Whether the person pairs: asked at the terminal (yes to go on) unless `yes`; the account is said either way.
        static func confirm(_ pairing: PairingObject, yes: Bool) throws -> Bool {
            let question = """
                Pair this directory as authenticator "\(Terminal.printable(pairing.deviceName))" of \(Terminal.printable(pairing.username)) \
                on \(pairing.server.absoluteString) (key fingerprint \(pairing.fingerprint))?
                """
            if yes {
                Terminal.warn(
                    "pairing as an authenticator of \(Terminal.printable(pairing.username)) on \(pairing.server.absoluteString)"
                )
                return true
            }
            while true {
                print("\(question) Type yes to pair or no to decline: ", terminator: "")
                fflush(nil)
                guard let line = Swift.readLine() else { return false }
                switch line.trimmingCharacters(in: .whitespaces).lowercased() {
                case "y", "yes": return true
                case "n", "no": return false
                default: continue
                }
            }
        }
    }
}
