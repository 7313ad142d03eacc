import FluentKit
import FluentPostgresDriver
import FluentSQLiteDriver
import Foundation
import Logging
import NIOCore
import NIOPosix
import SQLKit

/// The open database and what owns it. SQLite gets its own one-thread event loop group, hence one
/// connection: every statement goes through it, so transactions never interleave and the busy handler
/// never spins; WAL lets that connection commit without rewriting the main file.
public final class ServerDatabase: Sendable {
    public let databases: Databases
    public let database: any Database
    let ownedGroup: MultiThreadedEventLoopGroup?
    public let location: DatabaseLocation

    public static func open(_ location: DatabaseLocation, logger: Logger) async throws -> ServerDatabase {
        let group: MultiThreadedEventLoopGroup?
        let databases: Databases
        switch location {
        case .sqlite(let path):
            let dir = URL(fileURLWithPath: path).deletingLastPathComponent().path
            guard FileManager.default.fileExists(atPath: dir) else {
                throw ConfigurationError("the directory of \(path) does not exist; create it or choose another --database sqlite:PATH")
            }
            let g = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            group = g
            databases = Databases(threadPool: NIOThreadPool.singleton, on: g)
            databases.use(.sqlite(.file(path), sqlLogLevel: .trace), as: .sqlite)
        case .postgres(let url):
            group = nil
            databases = Databases(threadPool: NIOThreadPool.singleton, on: MultiThreadedEventLoopGroup.singleton)
            do {
                databases.use(try .postgres(url: url, maxConnectionsPerEventLoop: 8, sqlLogLevel: .trace), as: .psql)
            } catch {
                throw ConfigurationError("--database \(location): \(error)")
            }
        }
        let eventLoop = (group ?? MultiThreadedEventLoopGroup.singleton).any()
        guard let db = databases.database(logger: logger, on: eventLoop) else { throw ConfigurationError("the database could not be opened") }
        let handle = ServerDatabase(databases: databases, database: db, group: group, location: location)
        do {
            if case .sqlite = location {
                let sql = db as! any SQLDatabase
                // NORMAL in WAL mode: a commit survives a killed process (the WAL is written before
                // COMMIT returns); only a power loss can take the last transactions.
                _ = try await sql.raw("PRAGMA journal_mode=WAL").all()
                try await sql.raw("PRAGMA synchronous=NORMAL").run()
                try await sql.raw("PRAGMA busy_timeout=5000").run()
            }
            let migrations = FluentKit.Migrations()
            migrations.add(Migrations.all)
            let migrator = Migrator(databases: databases, migrations: migrations, logger: logger, on: eventLoop, migrationLogLevel: .debug)
            try await migrator.setupIfNeeded().get()
            try await migrator.prepareBatch().get()
        } catch let e as ConfigurationError {
            await handle.close()
            throw e
        } catch {
            await handle.close()
            throw ConfigurationError("cannot open \(location): \(String(reflecting: error))")
        }
        return handle
    }

    init(databases: Databases, database: any Database, group: MultiThreadedEventLoopGroup?, location: DatabaseLocation) {
        self.databases = databases; self.database = database; self.ownedGroup = group; self.location = location
    }

    public func close() async {
        await databases.shutdownAsync()
        try? await ownedGroup?.shutdownGracefully()
    }
}
