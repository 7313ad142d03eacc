import ArgumentParser
import CountersignAPI
import CountersignClient
import Foundation

/// `countersign account …`: the client side of the server's accounts.
struct AccountCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account",
        abstract: "Register, sign in and manage your account on a Countersign server.",
        discussion: """
            The session token is kept in ~/.config/countersign/session.json (mode 0600). Passwords are read \
            from the terminal without echo, or from the first line of --password-file.
            """,
        subcommands: [
            Register.self, Login.self, Logout.self, Whoami.self, Passwd.self, Settings.self, Audit.self, MFA.self,
            Passkeys.self,
        ]
    )

    struct ServerOption: ParsableArguments {
        @Option(
            help: ArgumentHelp(
                "The server, e.g. http://127.0.0.1:8080 (default: the signed-in one, or $COUNTERSIGN_SERVER).",
                valueName: "url"
            )
        )
        var server: String?

        func url(required: Bool = true) throws -> URL {
            let text =
                try server ?? ProcessInfo.processInfo.environment["COUNTERSIGN_SERVER"] ?? SessionFile.load()?.server
            guard let text else { throw ValidationError("name the server with --server URL") }
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                throw ValidationError("--server must be an http:// or https:// URL, not \(text)")
            }
            return url
        }
    }

    /// The HTTP calls (AsyncHTTPClient) reach a server named by an IPv6 address in brackets; the push
    /// channel's WebSocket client (swift-websocket's WSClient) does not: its URL parser ends the host at
    /// the first ':', so `[::1]` becomes the host `[` and every connection fails to resolve it. Said
    /// before `watch` starts, with what works, rather than as an endless retry.
    static func refuseIPv6LiteralForPush(_ url: URL) throws {
        guard let host = URLComponents(url: url, resolvingAgainstBaseURL: false)?.host, host.contains(":") else {
            return
        }
        throw CLIError.usage(
            """
            \(url.absoluteString) names the server by an IPv6 address: the push channel's WebSocket client cannot connect \
            to one (its URL parser takes the first ':' inside the brackets for the port); sign in with a host name that \
            resolves to it instead (localhost for [::1], or a name in /etc/hosts or DNS)
            """
        )
    }

    /// A client for the signed-in session, refusing when the session is for another server.
    static func signedInClient(_ option: ServerOption) throws -> (CountersignClient, SessionFile) {
        guard let file = try SessionFile.load() else { throw ClientError.notSignedIn }
        let url = try option.url()
        guard url.absoluteString == file.server else {
            throw CLIError.usage(
                "signed in to \(file.server), not \(url.absoluteString); run `countersign account login --server \(url.absoluteString)`"
            )
        }
        return (CountersignClient(server: url, token: file.token), file)
    }

    /// From the first line of `file`, else asked on the terminal; `fileOption` is the flag that names the file.
    static func password(
        file: String?,
        fileOption: String = "--password-file",
        prompt: String,
        confirm: Bool = false
    ) throws -> String {
        if let file {
            return String(decoding: try Terminal.passphrase(fromFile: file, what: "password"), as: UTF8.self)
        }
        let instead = "use \(fileOption) FILE"
        let first = String(decoding: try Terminal.ask(prompt, what: "password", instead: instead), as: UTF8.self)
        if confirm {
            guard
                String(decoding: try Terminal.ask("Repeat: ", what: "password", instead: instead), as: UTF8.self)
                    == first
            else {
                throw CLIError.usage("the passwords do not match; nothing was changed")
            }
        }
        return first
    }

    /// The server's username rule, checked here so a mistyped name is refused before any network or captcha
    /// work, in the server's own words.
    static func validate(username: String) throws {
        guard UsernameRule.normalised(username) != nil else {
            throw ValidationError("username: \(UsernameRule.description)")
        }
    }

    struct Register: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create an account (solves the server's captcha).")
        @OptionGroup var server: ServerOption
        @Argument(help: "3 to 32 characters: a-z, 0-9, '.', '_', '-'.") var username: String
        @Option(help: "Your first name.") var name: String
        @Option(help: "Your last name.") var lastname: String
        @Option(help: ArgumentHelp("Read the password from the first line of this file.", valueName: "file"))
        var passwordFile: String?

        func validate() throws { try AccountCommand.validate(username: username) }

        func run() async throws {
            let client = CountersignClient(server: try server.url())
            let password = try AccountCommand.password(
                file: passwordFile,
                prompt: "New password (8-128 characters): ",
                confirm: true
            )
            let account = try await client.register(
                username: username,
                password: password,
                name: name,
                lastname: lastname
            )
            print(
                Terminal.printable(
                    "registered \(account.username); sign in with: \(SessionFile.invocation) account login \(account.username) --server \(client.server.absoluteString)"
                )
            )
        }
    }

    struct Login: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign in and keep the session token.",
            discussion: """
                With multi-factor sign-in on, the password is followed by the second factor: a push to your authenticators \
                ("Number to match: NN" is printed; approve there with that number, and this waits), or --otp CODE (an authenticator \
                app's code or a paired authenticator's `countersign authenticator otp`), or --recovery-code CODE. With --qr no \
                username or password: an authentication code is printed alone on the first line, then its URI and QR code, and an \
                authenticator's `countersign authenticator auth CODE --approve USER` signs you in.
                """
        )
        @OptionGroup var server: ServerOption
        @Argument(help: "Your username (left out with --qr).") var username: String?
        @Option(help: ArgumentHelp("Read the password from the first line of this file.", valueName: "file"))
        var passwordFile: String?
        @Option(
            name: .long,
            help: ArgumentHelp(
                "Finish the second factor with this passcode (authenticator app, or `authenticator otp`).",
                valueName: "code"
            )
        )
        var otp: String?
        @Option(
            name: .long,
            help: ArgumentHelp("Finish the second factor with one of your recovery codes.", valueName: "code")
        )
        var recoveryCode: String?
        @Flag(
            name: .long,
            help: "Sign in by approving an authentication code (QR) on a paired authenticator; no password."
        )
        var qr = false

        func validate() throws {
            if qr {
                if username != nil || passwordFile != nil || otp != nil || recoveryCode != nil {
                    throw ValidationError(
                        "--qr takes no username, --password-file, --otp or --recovery-code: the authenticator says who signs in"
                    )
                }
                return
            }
            guard let username else {
                throw ValidationError("give the username (or --qr to sign in from a paired authenticator)")
            }
            try MFALogin.validate(otp: otp, recoveryCode: recoveryCode)
            try AccountCommand.validate(username: username)
        }

        func run() async throws {
            let url = try server.url()
            // Before the server makes a session: one that could not be written here would be left open there.
            try SessionFile.prepare()
            let client = CountersignClient(server: url)
            let s: SignedInSession
            if qr {
                s = try await MFALogin.qr(client)
            } else {
                let username = username ?? ""
                let password = try AccountCommand.password(file: passwordFile, prompt: "Password for \(username): ")
                do {
                    // With a code in hand, no push: it would wait on the authenticators with a number nobody sees.
                    s = try await client.signIn(
                        username: username,
                        password: password,
                        offerPush: otp == nil && recoveryCode == nil
                    )
                    if otp != nil || recoveryCode != nil {
                        Terminal.warn("note: \(username) has no second factor; the password alone signed in")
                    }
                } catch ClientError.secondFactorRequired(let pending) {
                    s = try await MFALogin.finish(client, pending, otp: otp, recoveryCode: recoveryCode)
                }
            }
            do {
                try SessionFile(
                    server: url.absoluteString,
                    username: s.account.username,
                    token: s.token,
                    expiresAt: s.expiresAt
                ).save()
            } catch {
                // The token is lost with the failed write: end the session rather than leave it open on the server.
                let ended = (try? await client.signOut()) != nil
                throw CLIError.io(
                    "\(error); \(ended ? "the new session was ended on the server again" : "the new session could not be ended on the server (it expires unused in 30 minutes)"); sign in again once that is fixed"
                )
            }
            print(
                Terminal.printable(
                    "signed in as \(s.account.username) until \(s.expiresAt.formatted(.iso8601)) (or 30 minutes unused)"
                )
            )
        }
    }

    struct Logout: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "End the session on the server and forget the token.",
            discussion: """
                --everywhere ends every session of the account: this one, other sign-ins and every device's device session \
                (message commands open a new one with the device key, which may ask for its passphrase). Authenticators stay paired.
                """
        )
        @OptionGroup var server: ServerOption
        @Flag(name: .long, help: "End every session of the account, on every machine, not only this one.")
        var everywhere = false

        func run() async throws {
            let (client, file) = try AccountCommand.signedInClient(server)
            if everywhere {
                try await DeviceCommand.accountCall { try await client.signOutEverywhere() }
                SessionFile.remove()
                print(
                    "signed out \(file.username) everywhere: every session and device session of the account has ended"
                )
                return
            }
            do {
                try await client.signOut()
            } catch ClientError.problem(let p) where p.kind == .unauthenticated {
                // Already expired on the server: forgetting it locally is all that is left.
            }
            SessionFile.remove()
            print("signed out \(file.username)")
        }
    }

    struct Whoami: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the signed-in account.")
        @OptionGroup var server: ServerOption

        func run() async throws {
            let (client, _) = try AccountCommand.signedInClient(server)
            let me = try await DeviceCommand.accountCall { try await client.me() }
            let interval =
                me.settings.reauthIntervalMinutes == 0 ? "never" : "every \(me.settings.reauthIntervalMinutes) minutes"
            print(
                Terminal.printable(
                    "\(me.username) (\(me.name) \(me.lastname)) on \(client.server.absoluteString); re-authentication: \(interval)"
                )
            )
        }
    }

    struct Passwd: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change your password; ends your other sessions.")
        @OptionGroup var server: ServerOption
        @Option(help: ArgumentHelp("Read the current password from this file.", valueName: "file")) var passwordFile:
            String?
        @Option(help: ArgumentHelp("Read the new password from this file.", valueName: "file")) var newPasswordFile:
            String?
        @Option(
            name: .long,
            help: ArgumentHelp(
                """
                If the server asks for a recent sign-in and the account has a second factor: this passcode instead of a push approval.
                """,
                valueName: "code"
            )
        )
        var otp: String?
        @Option(name: .long, help: ArgumentHelp("As --otp, with a recovery code (spent).", valueName: "code"))
        var recoveryCode: String?

        func validate() throws {
            try MFALogin.validate(otp: otp, recoveryCode: recoveryCode)
        }

        func run() async throws {
            let (client, _) = try AccountCommand.signedInClient(server)
            let current = try AccountCommand.password(file: passwordFile, prompt: "Current password: ")
            let new = try AccountCommand.password(
                file: newPasswordFile,
                fileOption: "--new-password-file",
                prompt: "New password (8-128 characters): ",
                confirm: newPasswordFile == nil
            )
            do {
                try await client.changePassword(current: current, new: new)
            } catch ClientError.problem(let p) where p.kind == .reauthenticationRequired {
                try await DeviceCommand.reauthenticate(client, password: current, otp: otp, recoveryCode: recoveryCode)
                try await client.changePassword(current: current, new: new)
            }
            print("password changed; your other sessions were signed out")
        }
    }

    struct Audit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List your sign-in attempts and security events, newest first."
        )
        @OptionGroup var server: ServerOption
        @Option(help: "How many events (1-100).") var limit = 20
        @Flag(name: .long, help: "Print one JSON array (at, kind, outcome, address, userAgent).") var json = false

        func validate() throws {
            guard (1...100).contains(limit) else { throw ValidationError("--limit takes 1 to 100") }
        }

        func run() async throws {
            let (client, _) = try AccountCommand.signedInClient(server)
            let page = try await DeviceCommand.accountCall { try await client.audit(limit: limit) }
            if json {
                let rows: [[String: Any]] = page.events.map {
                    [
                        "at": PrivateFiles.date($0.at), "kind": $0.kind, "outcome": $0.outcome, "address": $0.address,
                        "userAgent": $0.userAgent,
                    ]
                }
                try Terminal.printJSON(rows)
                return
            }
            if page.events.isEmpty { print("no events") }
            // Columns as wide as their longest entry: an outcome is never cut short.
            let kinds = page.events.map { Terminal.printable($0.kind) }
            let outcomes = page.events.map { Terminal.printable($0.outcome) }
            let kindWidth = kinds.map(\.count).max() ?? 0
            let outcomeWidth = outcomes.map(\.count).max() ?? 0
            for (i, e) in page.events.enumerated() {
                print(
                    "\(PrivateFiles.date(e.at))  \(kinds[i].padding(toLength: kindWidth, withPad: " ", startingAt: 0))  "
                        + "\(outcomes[i].padding(toLength: outcomeWidth, withPad: " ", startingAt: 0))  \(Terminal.printable(e.address))  \(Terminal.printable(e.userAgent))"
                )
            }
        }
    }
}
