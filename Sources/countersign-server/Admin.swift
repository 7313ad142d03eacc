import ArgumentParser
import CountersignServer
import Foundation
import Logging

/// `countersign-server admin …` (or `countersign admin …`): operations on the database, run on the server machine.
struct Admin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Administer a Countersign database directly.",
        subcommands: [
            Unlock.self, Messages.self, Backup.self, DemoUsers.self, OIDCClientCommand.self, OIDCKeysCommand.self,
        ]
    )

    /// The server's database, which must exist: opening a SQLite path that is not there would create an
    /// empty database and answer from it ("no such user").
    static func existingDatabase(_ options: DatabaseOptions) throws -> DatabaseLocation {
        let environment = ProcessInfo.processInfo.environment
        let settings = try ServerSettings.load(
            path: options.config ?? environment["COUNTERSIGN_CONFIG"],
            environment: environment
        )
        let location = try DatabaseLocation(
            parsing: options.database ?? settings["COUNTERSIGN_DATABASE"] ?? "sqlite:countersign.sqlite"
        )
        if case .sqlite(let path) = location, !FileManager.default.fileExists(atPath: path) {
            let named =
                options.database != nil
                ? "--database"
                : settings["COUNTERSIGN_DATABASE"] != nil ? settings.source("COUNTERSIGN_DATABASE") : "the default"
            throw ValidationError(
                """
                no database at \(path) (\(named)); nothing was created. Name the server's database with --database sqlite:PATH \
                (scripts/serve.sh uses sqlite:.data/countersign.sqlite) or postgres://…, or set COUNTERSIGN_DATABASE
                """
            )
        }
        return location
    }

    /// Where the database is: `--database`, else the environment, else the configuration file.
    struct DatabaseOptions: ParsableArguments {
        @Option(
            help: ArgumentHelp(
                "The server's existing database: sqlite:PATH or postgres://… (default sqlite:countersign.sqlite, or $COUNTERSIGN_DATABASE).",
                valueName: "url"
            )
        )
        var database: String?

        @Option(help: ArgumentHelp("The server's configuration file, or $COUNTERSIGN_CONFIG.", valueName: "file"))
        var config: String?
    }

    struct Messages: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the stored messages as the server sees them: sender => recipients, date, size, ciphertext."
        )

        @OptionGroup var database: DatabaseOptions

        @Option(help: "At most this many, newest first (default 100).")
        var limit = 100

        func run() async throws {
            guard (1...100_000).contains(limit) else { throw ValidationError("--limit takes 1 to 100000") }
            let location = try Admin.existingDatabase(database)
            var logger = Logger(label: "countersign")
            logger.logLevel = .warning
            let lines = try await CountersignServer.messageLines(database: location, limit: limit, logger: logger)
            if lines.isEmpty { FileHandle.standardError.write(Data("no messages stored\n".utf8)) }
            for line in lines { print(line) }
        }
    }

    struct Backup: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy a SQLite database, consistently, while a server may be serving it.",
            discussion: """
                The copy is one snapshot (VACUUM INTO), checked by SQLite's integrity check and written to a new \
                private file (0600) that appears only when complete; FILE must not exist. To restore: stop the \
                server, move its database file and any -wal and -shm files beside it away, copy the backup in its \
                place, and start the server. PostgreSQL: use pg_dump (docs/SERVER.md, BACKUP AND RESTORE).
                """
        )

        @OptionGroup var database: DatabaseOptions

        @Argument(help: "The new file to write the copy to.")
        var file: String

        func run() async throws {
            let location = try Admin.existingDatabase(database)
            print(try CountersignServer.backup(database: location, to: file))
        }
    }

    struct DemoUsers: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "demo-users",
            abstract: "Create demo accounts user1…userN, each with a strong random password printed once.",
            discussion: """
                For a demonstration or a classroom (cryptology-project's demo users, without its shared password \
                1234): one line per account, `USERNAME PASSWORD`, on standard output; the passwords are stored \
                only as Argon2id hashes and cannot be shown again. Refused on a database that already has accounts, \
                unless --force (then existing userK accounts are left as they are).
                """
        )

        @Argument(help: "How many accounts (1 to \(CountersignServer.demoUserLimit)).")
        var count: Int

        @Flag(help: "Add them even though the database already has accounts.")
        var force = false

        @OptionGroup var database: DatabaseOptions

        func validate() throws {
            guard (1...CountersignServer.demoUserLimit).contains(count) else {
                throw ValidationError("COUNT must be 1 to \(CountersignServer.demoUserLimit)")
            }
        }

        func run() async throws {
            let location = try Admin.existingDatabase(database)
            var logger = Logger(label: "countersign")
            logger.logLevel = .warning
            var made = 0
            let existing = try await CountersignServer.demoUsers(
                count: count,
                force: force,
                database: location,
                logger: logger
            ) { user in
                print("\(user.username) \(user.password)")
                fflush(nil)
                made += 1
            }
            let note =
                "created \(made) demo account\(made == 1 ? "" : "s"); their passwords are shown only here"
                + (existing.isEmpty ? "" : "; already there, left unchanged: \(existing.joined(separator: ", "))")
            FileHandle.standardError.write(Data((note + "\n").utf8))
        }
    }

    struct Unlock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Clear an account's failed sign-ins and lock.")

        @Argument(help: "The username to unlock.")
        var username: String

        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let location = try Admin.existingDatabase(database)
            var logger = Logger(label: "countersign")
            logger.logLevel = .warning
            let message = try await CountersignServer.unlock(username: username, database: location, logger: logger)
            print(message)
        }
    }
}
