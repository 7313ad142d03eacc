import ArgumentParser
import CountersignClient
import CountersignCrypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `countersign authenticator …`: this config directory as an authenticator of an account (docs/PROTOCOL.md
/// §3), through the SDK's `CountersignAuthenticator`: push approvals with number matching, passcodes,
/// QR authentication codes.
struct AuthenticatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authenticator",
        abstract: "Make this config directory an authenticator: approve sign-ins, show passcodes, answer QR codes.",
        discussion: """
            Pair with a key from `countersign account mfa pairing-key`. The authenticator's P-256 key goes to keys/ \
            (as `device init` stores keys) and its state to authenticator.json (mode 0600). A config directory is either a \
            messaging device or an authenticator: use COUNTERSIGN_CONFIG_DIR=DIR to keep one of each.
            """,
        subcommands: [
            Pair.self, Status.self, Pending.self, Approve.self, Deny.self, Watch.self, OTP.self, Auth.self, Push.self,
            Logs.self,
            Unpair.self,
        ]
    )

    /// Runs an authenticator call; the SDK's PingOne errors and expired sessions are said in the CLI's words.
    static func run<T>(_ context: AuthenticatorContext, _ call: () async throws -> T) async throws -> T {
        do {
            return try await context.withSession(call)
        } catch let e as PingOneError {
            throw CLIError.usage("\(e)")
        } catch let e as ClientError where e.code == .notAnAuthenticator {
            throw CLIError.usage("\(e) (this directory's session is not an authenticator's)")
        }
    }

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

    /// One pending push challenge as `pending` shows it.
    static func describe(_ n: NotificationObject) -> String {
        let c = n.clientContext
        let when = PrivateFiles.date(Date(timeIntervalSince1970: TimeInterval(c.time)))
        let matching =
            n.numberMatchingType == "SELECT_NUMBER"
            ? "pick one of \(Terminal.printable(n.numberMatchingOptions.joined(separator: " ")))"
            : "type the number shown"
        return
            "\(n.transactionID)  \(Terminal.printable(n.username))\(n.isReauthentication ? "  RE-AUTHENTICATION (already signed in)" : "")  from \(Terminal.printable(c.address)) "
            + "(\(Terminal.printable(c.userAgent))) at \(when)  \(Terminal.printable(n.numberMatchingType)): \(matching)  expires \(PrivateFiles.date(n.expiresAt))"
    }

    static func jsonObject(_ n: NotificationObject) -> [String: Any] {
        let c = n.clientContext
        return [
            "id": n.transactionID, "user": n.username, "address": c.address, "userAgent": c.userAgent,
            "time": PrivateFiles.date(Date(timeIntervalSince1970: TimeInterval(c.time))),
            "numberMatchingType": n.numberMatchingType,
            "options": n.numberMatchingOptions, "expiresAt": PrivateFiles.date(n.expiresAt),
            "purpose": n.isReauthentication ? "reauthentication" : "sign-in",
        ]
    }

    struct Pending: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the sign-in requests waiting for this authenticator's answer."
        )
        @Flag(
            name: .long,
            help: "Print one JSON array (id, user, address, userAgent, time, numberMatchingType, options, expiresAt)."
        )
        var json = false
        @OptionGroup var keyOptions: PrivateKeyOptions

        func run() async throws {
            let context = try AuthenticatorContext(keyOptions: keyOptions)
            let pending = try await AuthenticatorCommand.run(context) {
                try await context.authenticator.pendingNotifications()
            }
            if json {
                let data = try JSONSerialization.data(
                    withJSONObject: pending.map(AuthenticatorCommand.jsonObject),
                    options: [.sortedKeys, .withoutEscapingSlashes]
                )
                print(Terminal.json(data))
            } else if pending.isEmpty {
                print("no sign-in requests waiting")
            } else {
                for n in pending { print(Terminal.printable(AuthenticatorCommand.describe(n))) }
            }
        }
    }

    /// The pending challenge with this transaction ID (or a unique prefix of it).
    static func notification(_ context: AuthenticatorContext, id: String) async throws -> NotificationObject {
        let pending = try await run(context) { try await context.authenticator.pendingNotifications() }
        let matches = pending.filter { $0.transactionID == id }
        let found = matches.isEmpty ? pending.filter { $0.transactionID.hasPrefix(id) } : matches
        guard found.count == 1 else {
            throw CLIError.usage(
                found.isEmpty
                    ? "no sign-in request \(Terminal.printable(id)) is waiting for this authenticator (answered, expired, or not for it); `countersign authenticator pending` lists them"
                    : "\(Terminal.printable(id)) matches \(found.count) requests; give more of the ID"
            )
        }
        return found[0]
    }

    /// Sends an answer, logs it, and says refusals plainly.
    static func answer(
        _ context: AuthenticatorContext,
        _ n: NotificationObject,
        what: String,
        _ call: @escaping () async throws -> String
    ) async throws -> String {
        do {
            let status = try await context.withSession(call)
            AuthenticatorLog.append("\(what) \(n.transactionID) for \(n.username): \(status)")
            return status
        } catch PingOneError.pushConfirmationTimeout {
            AuthenticatorLog.append("\(what) \(n.transactionID): expired")
            throw CLIError.usage(
                "the sign-in request expired before the answer (PingOne 10009 pushConfirmationTimeout); nothing was changed"
            )
        } catch PingOneError.failedPolicyRequirements {
            AuthenticatorLog.append("\(what) \(n.transactionID): refused")
            throw CLIError.usage(
                "the server refused the answer: the sign-in was already answered or finished (PingOne 10012 failedPolicyRequirements)"
            )
        }
    }

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

    struct Deny: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Deny a sign-in request; prints the status (FAILED).")
        @Argument(help: "The request's ID (see `countersign authenticator pending`), or a unique prefix of it.") var id:
            String
        @Flag(
            name: .long,
            help:
                "Report it as \"this wasn't me\": push approval is suspended for the account until it signs in with a code."
        )
        var report = false
        @OptionGroup var keyOptions: PrivateKeyOptions

        func run() async throws {
            let context = try AuthenticatorContext(keyOptions: keyOptions)
            let n = try await AuthenticatorCommand.notification(context, id: id)
            let status = try await AuthenticatorCommand.answer(context, n, what: report ? "deny (reported)" : "deny") {
                try await n.deny(report: report)
            }
            print(Terminal.printable(status))
        }
    }

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

    struct OTP: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show this authenticator's passcode for `account login --otp`.",
            discussion: "On a terminal: a live countdown (Ctrl-C to stop). Otherwise one line: CODE SECONDS_LEFT."
        )
        @OptionGroup var keyOptions: PrivateKeyOptions

        func run() async throws {
            let context = try AuthenticatorContext(keyOptions: keyOptions)
            func current() throws -> (String, Int) {
                let now = Date()
                let info = try context.authenticator.oneTimePasscode(at: now)
                return (info.passcode, max(1, Int((info.validUntil - now.timeIntervalSince1970).rounded(.up))))
            }
            guard isatty(1) == 1 else {
                let (code, left) = try current()
                print("\(code) \(left)")
                return
            }
            AuthenticatorLog.append("showed passcodes")
            while true {
                let (code, left) = try current()
                print("\r\(code)  \(left)s \u{1b}[K", terminator: "")
                fflush(nil)
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

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

    struct Logs: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Support logs.", subcommands: [Send.self])

        struct Send: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract:
                    "Send this authenticator's recent log lines to the server (credentials masked); prints the support ID."
            )
            @OptionGroup var keyOptions: PrivateKeyOptions

            func run() async throws {
                let context = try AuthenticatorContext(keyOptions: keyOptions)
                var lines = AuthenticatorLog.lines().suffix(200).map { $0 }
                if lines.isEmpty {
                    let f = context.file
                    lines = [
                        "countersign \(Countersign.configuration.version): authenticator \(f.state.deviceId) (\(f.name)) for \(f.state.username) "
                            + "on \(f.state.server), paired \(PrivateFiles.date(f.pairedAt)); no log lines yet"
                    ]
                }
                let id = try await AuthenticatorCommand.run(context) { try await context.authenticator.sendLogs(lines) }
                AuthenticatorLog.append("sent logs: support id \(id)")
                print(Terminal.printable(id))
            }
        }
    }
}
