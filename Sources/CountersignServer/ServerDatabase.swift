import FluentKit
import FluentPostgresDriver
import FluentSQLiteDriver
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import SQLKit
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The open database and what owns it. SQLite gets its own one-thread event loop group, hence one
/// connection: every statement goes through it, so transactions never interleave and the busy handler
/// never spins; WAL lets that connection commit without rewriting the main file.
public final class ServerDatabase: Sendable {
    public let databases: Databases
    public let database: any Database
    let ownedGroup: MultiThreadedEventLoopGroup?
    /// SQLite: read-only connections, one per core, on their own threads. In WAL mode they read the last
    /// committed state while the one writer writes, so the hot reads (who is this device session, who
    /// are these recipients) neither wait for nor occupy the writer. Nil for PostgreSQL (its pool reads).
    let readerGroup: MultiThreadedEventLoopGroup?
    let readerDatabases: Databases?
    private let nextReader = Mutex(0)
    /// SQLite: the direct writer for send batches and direct read-only connections (one per core) for
    /// device-session lookups, on SQLiteNIO's own copy of SQLite (`DirectSQLite`): each a whole unit of
    /// work in one hop instead of a hop per statement. Empty for PostgreSQL.
    let sendWriter: SQLiteWorker?
    let sessionReaders: [SQLiteWorker]
    /// SQLite: copies the WAL into the file in the background, so that no commit waits for a checkpoint.
    let checkpointer: SQLiteCheckpointer?
    private let nextSessionReader = Mutex(0)
    /// PostgreSQL: connections of their own, on threads of their own, for send batches and grouped
    /// device-session reads (`PostgresLane`). Nil for SQLite.
    let postgresLanes: PostgresLanes?
    public let location: DatabaseLocation

    public static func open(_ location: DatabaseLocation, logger configured: Logger) async throws -> ServerDatabase {
        // PostgreSQL logs statements at trace; never let that reach the output, whatever the log level.
        var logger = configured
        if logger.logLevel < .info { logger.logLevel = .info }
        let group: MultiThreadedEventLoopGroup?
        let databases: Databases
        var laneConfiguration: PostgresConnection.Configuration?
        switch location {
        case .sqlite(let path):
            let dir = URL(fileURLWithPath: path).deletingLastPathComponent().path
            guard FileManager.default.fileExists(atPath: dir) else {
                throw ConfigurationError(
                    "the directory of \(path) does not exist; create it or choose another --database sqlite:PATH"
                )
            }
            // The file holds password hashes and the captcha key: create it private (SQLite gives its
            // -wal and -shm files the same mode).
            let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                throw ConfigurationError("cannot create \(path): \(String(cString: strerror(errno)))")
            }
            Glibc.close(fd)
            let g = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            group = g
            databases = Databases(threadPool: NIOThreadPool.singleton, on: g)
            // No query logging at all: bound values include password hashes and the captcha key.
            databases.use(.sqlite(.file(path), sqlLogLevel: nil), as: .sqlite)
        case .postgres(let url):
            group = nil
            databases = Databases(threadPool: NIOThreadPool.singleton, on: MultiThreadedEventLoopGroup.singleton)
            do {
                var configuration = try SQLPostgresConfiguration(url: url)
                // Named prepared statements on the pool (the lanes pin their own plans: PostgresLanes):
                // plan each execution for the table sizes of the moment, never a generic plan cached
                // while a table was small (a sequential scan kept until the next ANALYZE). Only named
                // statements are affected: every other query is planned per use anyway.
                configuration.coreConfiguration.options.additionalStartupParameters.append(
                    ("plan_cache_mode", "force_custom_plan")
                )
                databases.use(
                    .postgres(
                        configuration: configuration,
                        maxConnectionsPerEventLoop: 8,
                        connectionPoolTimeout: .seconds(10),
                        encodingContext: .default,
                        decodingContext: .default,
                        sqlLogLevel: .trace
                    ),
                    as: .psql
                )
                laneConfiguration = configuration.coreConfiguration
            } catch {
                // The underlying error carries the whole URL, password included: say what is wrong without it.
                throw ConfigurationError(
                    "--database \(location) is not a URL PostgreSQL accepts (postgres://user:pass@host:port/db, optionally ?tlsmode=disable|prefer|require)"
                )
            }
        }
        let eventLoop = (group ?? MultiThreadedEventLoopGroup.singleton).any()
        guard let db = databases.database(logger: logger, on: eventLoop) else {
            throw ConfigurationError("the database could not be opened")
        }
        // After the last early exit: from here on `close()` (below, on failure) shuts the lanes' threads down.
        let lanes = laneConfiguration.map { PostgresLanes(configuration: $0, logger: logger) }
        var readerGroup: MultiThreadedEventLoopGroup?
        var readerDatabases: Databases?
        if case .sqlite(let path) = location {
            let readers = MultiThreadedEventLoopGroup(numberOfThreads: max(1, System.coreCount))
            readerGroup = readers
            let r = Databases(threadPool: NIOThreadPool.singleton, on: readers)
            r.use(
                .sqlite(.file(path), maxConnectionsPerEventLoop: 1, sqlLogLevel: nil),
                as: Self.readers,
                isDefault: true
            )
            readerDatabases = r
        }
        var handle = ServerDatabase(
            databases: databases,
            database: db,
            group: group,
            readerGroup: readerGroup,
            readerDatabases: readerDatabases,
            sendWriter: nil,
            sessionReaders: [],
            location: location,
            postgresLanes: lanes
        )
        do {
            if case .sqlite = location {
                let sql = db as! any SQLDatabase
                // NORMAL in WAL mode: a commit survives a killed process (the WAL is written before
                // COMMIT returns); only a power loss can take the last transactions.
                _ = try await sql.raw("PRAGMA journal_mode=WAL").all()
                try await sql.raw("PRAGMA synchronous=NORMAL").run()
                try await sql.raw("PRAGMA busy_timeout=5000").run()
                // Checkpoints run in the background (SQLiteCheckpointer); inline only as a safety net.
                try await sql.raw("PRAGMA wal_autocheckpoint=\(unsafeRaw: String(SQLiteCheckpointer.inlineAfterPages))")
                    .run()
                try await sql.raw("PRAGMA journal_size_limit=\(unsafeRaw: String(SQLiteCheckpointer.walSizeLimit))")
                    .run()
            }
            let migrations = FluentKit.Migrations()
            migrations.add(Migrations.all)
            let migrator = Migrator(
                databases: databases,
                migrations: migrations,
                logger: logger,
                on: eventLoop,
                migrationLogLevel: .debug
            )
            try await migrator.setupIfNeeded().get()
            try await migrator.prepareBatch().get()
            // Readers may never write, and wait rather than fail while a checkpoint holds the file.
            for loop in readerGroup.map({ Array($0.makeIterator()) }) ?? [] {
                guard let reader = readerDatabases?.database(Self.readers, logger: logger, on: loop) as? any SQLDatabase
                else { continue }
                try await reader.raw("PRAGMA query_only=1").run()
                try await reader.raw("PRAGMA busy_timeout=5000").run()
            }
            // After the migrations: the direct connections prepare statements over the tables they made.
            if case .sqlite(let path) = location {
                let checkpointer = try SQLiteCheckpointer(path: path)
                let writer = try SQLiteWorker(label: "countersign.sqlite.sends", path: path, readOnly: false)
                let readers = try (0..<max(1, System.coreCount)).map { i in
                    try SQLiteWorker(label: "countersign.sqlite.sessions.\(i)", path: path, readOnly: true)
                }
                handle = ServerDatabase(
                    databases: databases,
                    database: db,
                    group: group,
                    readerGroup: readerGroup,
                    readerDatabases: readerDatabases,
                    sendWriter: writer,
                    sessionReaders: readers,
                    location: location,
                    checkpointer: checkpointer
                )
            }
        } catch let e as ConfigurationError {
            await handle.close()
            throw e
        } catch {
            await handle.close()
            throw ConfigurationError("cannot open \(location): \(DatabaseFailure.describe(error, location: location))")
        }
        return handle
    }

    init(
        databases: Databases,
        database: any Database,
        group: MultiThreadedEventLoopGroup?,
        readerGroup: MultiThreadedEventLoopGroup?,
        readerDatabases: Databases?,
        sendWriter: SQLiteWorker?,
        sessionReaders: [SQLiteWorker],
        location: DatabaseLocation,
        checkpointer: SQLiteCheckpointer? = nil,
        postgresLanes: PostgresLanes? = nil
    ) {
        self.databases = databases
        self.database = database
        self.ownedGroup = group
        self.readerGroup = readerGroup
        self.readerDatabases = readerDatabases
        self.sendWriter = sendWriter
        self.sessionReaders = sessionReaders
        self.location = location
        self.checkpointer = checkpointer
        self.postgresLanes = postgresLanes
    }

    /// The message store the server sends through: on SQLite, batches go to the direct writer.
    var messageStore: SQLMessageStore {
        SQLMessageStore(
            database: database,
            writer: sendWriter,
            readers: { self.reader },
            directReaders: { self.sessionReader },
            sendLane: postgresLanes?.send
        )
    }

    /// The next direct session reader, round robin; nil for PostgreSQL.
    var sessionReader: SQLiteWorker? {
        guard !sessionReaders.isEmpty else { return nil }
        return sessionReaders[
            nextSessionReader.withLock { i in
                defer { i = (i + 1) % sessionReaders.count }
                return i
            }
        ]
    }

    static let readers = DatabaseID(string: "sqlite-readers")

    /// A database for reads that may see any committed state: a reader connection (SQLite), or the pool.
    public var reader: any Database {
        guard let group = readerGroup, let readerDatabases else {
            // PostgreSQL: the pool of the next event loop, round robin; `database` alone would put every
            // read on one loop's connections, and so all their I/O on one thread.
            guard case .postgres = location else { return database }
            let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
            let loop = loops[
                nextReader.withLock { i in
                    defer { i = (i + 1) % loops.count }
                    return i
                }
            ]
            return databases.database(logger: database.logger, on: loop) ?? database
        }
        let loops = Array(group.makeIterator())
        let loop = loops[
            nextReader.withLock { i in
                defer { i = (i + 1) % loops.count }
                return i
            }
        ]
        return readerDatabases.database(Self.readers, logger: database.logger, on: loop) ?? database
    }

    public func close() async {
        checkpointer?.close()
        sendWriter?.close()
        sessionReaders.forEach { $0.close() }
        await postgresLanes?.close()
        await databases.shutdownAsync()
        await readerDatabases?.shutdownAsync()
        try? await ownedGroup?.shutdownGracefully()
        try? await readerGroup?.shutdownGracefully()
    }
}
