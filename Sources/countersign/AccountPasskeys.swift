import ArgumentParser
import CountersignClient
import Foundation

extension AccountCommand {
    /// `countersign account passkeys …`: the account's passkeys, listed, renamed and removed. Made only in
    /// a browser: WebAuthn needs one and the device's authenticator.
    struct Passkeys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "passkeys",
            abstract: "List, rename and remove your passkeys (add them in the web client: Settings → Passkeys).",
            discussion: """
                A passkey signs you in to the web client without a password, or is the second factor after it. A terminal \
                cannot make one (that needs a browser and your device's authenticator): add passkeys in the web client, under \
                Settings → Passkeys. A passkey is synced (a password manager or your platform keeps it on all your devices) or \
                device-bound (one security key or device). Removing one needs a recent sign-in: when the server asks, the \
                password is read again (--password-file FILE or the terminal) and, on an account with a second factor, that \
                factor too (--otp CODE, --recovery-code CODE, or a push approval). The password always remains a way to sign in.
                """,
            subcommands: [List.self, Rename.self, Remove.self],
            defaultSubcommand: List.self
        )

        static let howToAdd = "add one in the web client (Settings → Passkeys): a terminal cannot make one"

        /// The passkey `idOrName` names in `list`: the one with that ID, else the only one with that name.
        static func find(_ idOrName: String, in list: [PasskeySummary], of username: String) throws -> PasskeySummary {
            if let byID = list.first(where: { $0.id == idOrName }) { return byID }
            let name = idOrName.trimmingCharacters(in: .whitespaces)
            let named = list.filter { $0.name == name }
            if named.count == 1 { return named[0] }
            guard named.isEmpty else {
                throw CLIError.usage(
                    """
                    \(named.count) passkeys are named "\(Terminal.printable(name))"; give the ID of the one you mean: \
                    \(named.map { Terminal.printable($0.id) }.joined(separator: ", "))
                    """
                )
            }
            throw notFound(idOrName, of: username)
        }

        static func notFound(_ idOrName: String, of username: String) -> CLIError {
            .usage(
                """
                no passkey \(Terminal.printable(idOrName)) (by ID or name) in \(username)'s account; \
                `countersign account passkeys` lists them
                """
            )
        }

        /// The passkey named on the command line, from the account's list.
        static func target(
            _ idOrName: String,
            _ client: CountersignClient,
            _ session: SessionFile
        ) async throws -> PasskeySummary {
            let list = try await DeviceCommand.accountCall { try await client.passkeys() }
            return try find(idOrName, in: list, of: session.username)
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List your passkeys, oldest first: name, created, last used, synced or device-bound, ID."
            )
            @Flag(
                name: .long,
                help: "Print one JSON array (id, name, createdAt, lastUsedAt, synced, backedUp, aaguid)."
            )
            var json = false

            func run() async throws {
                let (client, _) = try DeviceCommand.accountClient()
                let passkeys = try await DeviceCommand.accountCall { try await client.passkeys() }
                if json {
                    let rows: [[String: Any]] = passkeys.map { p in
                        [
                            "id": p.id, "name": p.name, "createdAt": PrivateFiles.date(p.createdAt),
                            "lastUsedAt": p.lastUsedAt.map(PrivateFiles.date) ?? NSNull(), "synced": p.synced,
                            "backedUp": p.backedUp, "aaguid": p.aaguid,
                        ]
                    }
                    try Terminal.printJSON(rows)
                    return
                }
                if passkeys.isEmpty {
                    print("no passkeys; \(Passkeys.howToAdd)")
                    return
                }
                print(Self.table(passkeys))
            }

            /// Columns as wide as their longest entry (a name is never cut short: it may be what `rename` and
            /// `remove` are given); the ID last.
            static func table(_ passkeys: [PasskeySummary]) -> String {
                let names = passkeys.map { Terminal.printable($0.name) }
                let width = max(4, names.map(\.count).max() ?? 0)
                func pad(_ text: String, _ n: Int) -> String { text.padding(toLength: n, withPad: " ", startingAt: 0) }
                let rows = passkeys.enumerated().map { i, p in
                    [
                        pad(names[i], width), pad(PrivateFiles.date(p.createdAt), 20),
                        pad(p.lastUsedAt.map(PrivateFiles.date) ?? "never", 20),
                        pad(p.synced ? "synced" : "device-bound", 12), Terminal.printable(p.id),
                    ].joined(separator: "  ")
                }
                let header = [pad("NAME", width), pad("CREATED", 20), pad("LAST USED", 20), pad("KIND", 12), "ID"]
                    .joined(separator: "  ")
                return ([header] + rows).joined(separator: "\n")
            }
        }

        struct Rename: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Give a passkey another name.")
            @Argument(
                help: "The passkey's ID (after `--` if it starts with '-'), or its name if no other passkey has it."
            )
            var passkey: String
            @Argument(help: "The new name: 1 to 64 characters.") var name: String

            func validate() throws {
                let trimmed = name.trimmingCharacters(in: .whitespaces)
                guard (1...64).contains(trimmed.count),
                    !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
                else { throw ValidationError("the new name takes 1 to 64 characters, without control characters") }
            }

            func run() async throws {
                let (client, session) = try DeviceCommand.accountClient()
                let old = try await Passkeys.target(passkey, client, session)
                let renamed: PasskeySummary
                do {
                    renamed = try await DeviceCommand.accountCall {
                        try await client.renamePasskey(id: old.id, to: name)
                    }
                } catch let e as ClientError where e.code == .notFound {
                    throw Passkeys.notFound(old.id, of: session.username)
                }
                print(
                    """
                    renamed passkey \(Terminal.printable(renamed.id)): "\(Terminal.printable(old.name))" -> \
                    "\(Terminal.printable(renamed.name))"
                    """
                )
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Remove a passkey: it no longer signs you in. Asks for the password if the server wants it.",
                discussion: """
                    Needs a sign-in within the last 10 minutes: when the server asks, the password is read again \
                    (--password-file FILE or the terminal) and, on an account with a second factor, that too.
                    """
            )
            @Argument(
                help: "The passkey's ID (after `--` if it starts with '-'), or its name if no other passkey has it."
            )
            var passkey: String
            @OptionGroup var reauth: ReauthOptions

            func run() async throws {
                let (client, session) = try DeviceCommand.accountClient()
                let target = try await Passkeys.target(passkey, client, session)
                do {
                    try await DeviceCommand.withReauthentication(client, session, reauth, what: "removing a passkey") {
                        try await client.removePasskey(id: target.id)
                    }
                } catch let e as ClientError where e.code == .notFound {
                    throw Passkeys.notFound(target.id, of: session.username)
                }
                print("removed passkey \(Terminal.printable(target.id)) (\"\(Terminal.printable(target.name))\")")
            }
        }
    }
}
