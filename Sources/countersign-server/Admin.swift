import ArgumentParser
import CountersignServer
import Foundation
import Logging

/// `countersign-server admin …` (or `countersign admin …`): operations on the database, run on the server machine.
struct Admin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Administer a Countersign database directly.",
        subcommands: [Unlock.self, Messages.self, Backup.self]
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
