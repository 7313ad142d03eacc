import ArgumentParser
import CountersignServer
import Foundation
import Logging

/// `countersign-server admin oidc-client add|list|show|update|remove` and `admin oidc-keys rotate`.
struct OIDCClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "oidc-client",
        abstract: "Register the applications that sign in with Countersign (OpenID Connect clients).",
        subcommands: [Add.self, List.self, Show.self, Update.self, Remove.self, NewSecret.self]
    )

    /// What a client is: the options `add` and `update` share (on update, only those given change).
    struct Description: ParsableArguments {
        @Option(help: "The name people see on the consent screen.") var name: String?
        @Option(
            name: .customLong("redirect-uri"),
            help: "A redirect URI, compared exactly (repeat for more; on update, the list given replaces the old)."
        )
        var redirectURIs: [String] = []
        @Option(name: .customLong("post-logout-redirect-uri"), help: "Where RP-initiated logout may return (repeat).")
        var postLogoutRedirectURIs: [String] = []
        @Option(name: .customLong("backchannel-logout-uri"), help: "Where logout tokens are sent (\"\" for none).")
        var backchannelLogoutURI: String?
        @Flag(name: .customLong("public"), help: "A native or browser app: no secret, PKCE required.")
        var isPublic = false
        @Flag(
            name: .customLong("confidential"),
            help: "On update: make a public client confidential (a secret is made)."
        )
        var confidential = false
        @Option(
            name: .customLong("first-party"),
            help: "yes: no consent screen (the administrator vouches for the app)."
        )
        var firstParty: Choice?
        @Option(help: "The sign-in it needs: password, mfa (default) or phishing-resistant (a passkey).")
        var policy: String?
        @Option(name: .customLong("allow-user"), help: "Only these usernames may use it (repeat); none: every account.")
        var allowedUsers: [String] = []
        @Option(name: .customLong("offline-access"), help: "yes: refresh tokens without asking for offline_access.")
        var offlineAccess: Choice?
        @Option(name: .customLong("id-token-alg"), help: "ES256 (default) or RS256, for apps that know only RS256.")
        var algorithm: String?
        @Option(help: "yes: a pairwise subject (sub differs per client).") var pairwise: Choice?
        @Option(
            help:
                "yes: it may pair authenticators by OpenID Connect (a mobilePayload, docs/PROTOCOL.md §6.11); only for an authenticator app you trust."
        ) var pairing: Choice?

        enum Choice: String, ExpressibleByArgument { case yes, no }

        func draft(updating: Bool) throws -> OIDCAdmin.Draft {
            if isPublic && confidential { throw ValidationError("--public and --confidential contradict each other") }
            var d = OIDCAdmin.Draft()
            d.name = name
            if !redirectURIs.isEmpty || !updating { d.redirectURIs = redirectURIs }
            if !postLogoutRedirectURIs.isEmpty || !updating { d.postLogoutRedirectURIs = postLogoutRedirectURIs }
            if let uri = backchannelLogoutURI { d.backchannelLogoutURI = .some(uri.isEmpty ? nil : uri) }
            d.isPublic = isPublic ? true : confidential ? false : (updating ? nil : false)
            d.firstParty = firstParty.map { $0 == .yes }
            d.policy = policy
            if !allowedUsers.isEmpty { d.allowedUsers = allowedUsers }
            d.offlineAccess = offlineAccess.map { $0 == .yes }
            d.algorithm = algorithm
            d.pairwise = pairwise.map { $0 == .yes }
            d.pairing = pairing.map { $0 == .yes }
            return d
        }
    }

    static func logger() -> Logger {
        var logger = Logger(label: "countersign")
        logger.logLevel = .warning
        return logger
    }

    /// Prints the client, and its secret once with a warning that it is not shown again.
    static func report(_ client: OIDCClient, secret: String?) {
        for line in OIDCAdmin.lines(client) { print(line) }
        if let secret {
            print("client_secret: \(secret)")
            FileHandle.standardError.write(
                Data("keep the client secret now: the server keeps only its hash and cannot show it again\n".utf8)
            )
        }
    }

    static func run<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let e as OIDCClientError { throw ValidationError(e.description) }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Register a client; its secret is printed once.")
        @Argument(help: "The client_id: 3 to 64 characters of a-z, 0-9, '.', '_' and '-'.") var id: String
        @OptionGroup var description: Description
        @OptionGroup var database: Admin.DatabaseOptions
        func run() async throws {
            let location = try Admin.existingDatabase(database)
            let (client, secret) = try await OIDCClientCommand.run {
                try await OIDCAdmin.add(
                    id,
                    try description.draft(updating: false),
                    database: location,
                    logger: logger()
                )
            }
            OIDCClientCommand.report(client, secret: secret)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the registered clients.")
        @OptionGroup var database: Admin.DatabaseOptions
        func run() async throws {
            let clients = try await OIDCAdmin.list(database: try Admin.existingDatabase(database), logger: logger())
            if clients.isEmpty { FileHandle.standardError.write(Data("no clients registered\n".utf8)) }
            for c in clients {
                print(
                    "\(c.id)  \(c.name)  \(c.isPublic ? "public" : "confidential")  \(c.policy.rawValue)"
                        + (c.managed ? "  (configuration file)" : "")
                )
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a client (never its secret).")
        @Argument(help: "The client_id.") var id: String
        @OptionGroup var database: Admin.DatabaseOptions
        func run() async throws {
            let location = try Admin.existingDatabase(database)
            let client = try await OIDCClientCommand.run {
                try await OIDCAdmin.show(id, database: location, logger: logger())
            }
            OIDCClientCommand.report(client, secret: nil)
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change a client; only what is given changes.")
        @Argument(help: "The client_id.") var id: String
        @OptionGroup var description: Description
        @Flag(name: .customLong("new-secret"), help: "Replace the client secret (the old one stops working).")
        var newSecret = false
        @OptionGroup var database: Admin.DatabaseOptions
        func run() async throws {
            let location = try Admin.existingDatabase(database)
            let (client, secret) = try await OIDCClientCommand.run {
                try await OIDCAdmin.update(
                    id,
                    try description.draft(updating: true),
                    newSecret: newSecret,
                    database: location,
                    logger: logger()
                )
            }
            OIDCClientCommand.report(client, secret: secret)
        }
    }

    struct NewSecret: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "new-secret",
            abstract:
                "Make a client secret for the configuration file: the secret for the app, its SHA-256 for the file."
        )
        func run() throws {
            let (secret, hash) = OIDCAdmin.secretAndHash()
            print("client_secret: \(secret)")
            print("secret-sha256: \(hash)")
            FileHandle.standardError.write(
                Data(
                    "give the application client_secret, and put secret-sha256 in the client's entry of oidc-clients; the secret is shown only now\n"
                        .utf8
                )
            )
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a client with its consents; every token it was given stops working."
        )
        @Argument(help: "The client_id.") var id: String
        @OptionGroup var database: Admin.DatabaseOptions
        func run() async throws {
            let location = try Admin.existingDatabase(database)
            try await OIDCClientCommand.run { try await OIDCAdmin.remove(id, database: location, logger: logger()) }
            print("removed \(id): its consents are gone and every token it was given is revoked")
        }
    }
}

struct OIDCKeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "oidc-keys",
        abstract: "Manage the OpenID Connect provider's signing keys.",
        subcommands: [Rotate.self]
    )

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign with new keys from now on; the old ones stay published until what they signed expires."
        )
        @OptionGroup var database: Admin.DatabaseOptions
        func run() async throws {
            let kids = try await OIDCAdmin.rotateKeys(
                database: try Admin.existingDatabase(database),
                logger: OIDCClientCommand.logger()
            )
            print("new signing keys: \(kids.joined(separator: ", ")) (every node signs with them within a minute)")
        }
    }
}
