import FluentKit
import FluentPostgresDriver
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import SQLKit
import Synchronization

/// The server's storage on PostgreSQL: Fluent's pool for the shared SQL, and connections of their own,
/// on threads of their own (`PostgresLanes`), for send batches and grouped device-session reads.
package final class PostgresStorage: ServerStorage {
    let databases: Databases
    package let database: any Database
    let lanes: PostgresLanes
    /// The device-session reads, grouped across concurrent requests over the session lanes.
    let sessions: PostgresSessionReads
    /// The sends' group commit, on the send lane.
    let sends: SendBatcher
    let url: String
    package var location: DatabaseLocation { .postgres(url: url) }
    package var dialect: StorageDialect { .postgres }
    private let nextReader = RoundRobin()

    static func open(url: String, logger: Logger, groupCommit: Int) async throws -> PostgresStorage {
        let location = DatabaseLocation.postgres(url: url)
        let databases = Databases(threadPool: NIOThreadPool.singleton, on: MultiThreadedEventLoopGroup.singleton)
        let laneConfiguration: PostgresConnection.Configuration
        do {
            var configuration = try SQLPostgresConfiguration(url: url)
            // Named prepared statements on the pool (the lanes pin their own plans: PostgresLanes):
            // plan each execution for the table sizes of the moment, never a generic plan cached
            // while a table was small (a sequential scan kept until the next ANALYZE). Only named
            // statements are affected: every other query is planned per use anyway.
            configuration.coreConfiguration.options.additionalStartupParameters.append(
                ("plan_cache_mode", "force_custom_plan")
            )
            configuration.coreConfiguration.options.additionalStartupParameters += PostgresLanes.keepaliveSettings
            databases.use(
                .postgres(
                    configuration: configuration,
                    maxConnectionsPerEventLoop: 8,
                    connectionPoolTimeout: ServerDatabase.queueWait,
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
        let eventLoop = MultiThreadedEventLoopGroup.singleton.any()
        guard let db = databases.database(logger: logger, on: eventLoop) else {
            throw ConfigurationError("the database could not be opened")
        }
        // After the last early exit: from here on a failure shuts the lanes' threads down.
        let lanes = PostgresLanes(configuration: laneConfiguration, logger: logger)
        do {
            try await ServerDatabase.migrate(databases, logger: logger, on: eventLoop)
        } catch {
            await lanes.close()
            await databases.shutdownAsync()
            throw error
        }
        return PostgresStorage(databases: databases, database: db, lanes: lanes, url: url, groupCommit: groupCommit)
    }

    private let closed = Atomic<Bool>(false)

    private init(databases: Databases, database: any Database, lanes: PostgresLanes, url: String, groupCommit: Int) {
        self.databases = databases
        self.database = database
        self.lanes = lanes
        sessions = PostgresSessionReads(lanes: lanes.sessions)
        sends = SendBatcher(executor: lanes.send.executor, maxBatch: groupCommit) { batch in
            try await Self.store(batch, on: lanes)
        }
        self.url = url
    }

    /// The pool of the next event loop, round robin: `database` alone would put every read on one
    /// loop's connections, and so all their I/O on one thread.
    package var reader: any Database {
        let loop = nextReader.pick(Array(MultiThreadedEventLoopGroup.singleton.makeIterator()))
        return databases.database(logger: database.logger, on: loop) ?? database
    }

    // MARK: The hot paths, on the lanes

    package func store(_ batch: [StoreRequest]) async throws -> [StoreOutcome] {
        try await Self.store(batch, on: lanes)
    }

    package func submit(_ request: StoreRequest) async throws -> StoreOutcome {
        try await sends.submit(request)
    }

    /// A batch in one transaction on the send lane.
    private static func store(_ batch: [StoreRequest], on lanes: PostgresLanes) async throws -> [StoreOutcome] {
        guard !batch.isEmpty else { return [] }
        return try await lanes.send.run { c, logger in try await PostgresSendStore.store(c, batch, logger: logger) }
    }

    package func deviceSessionContext(
        tokenHash: String
    ) async throws -> (DeviceSessionRecord, DeviceRecord, AccountRecord)? {
        try await sessions.read(tokenHash: tokenHash)
    }

    /// Push signals between the nodes serving this database: LISTEN/NOTIFY.
    package func pushBus(logger: Logger, deliver: @escaping @Sendable (PushSignal) -> Void) -> any PushBus {
        PostgresPushBus(url: url, database: sql, node: UUID().uuidString, logger: logger, deliverLocal: deliver)
    }

    /// Closes the lanes and the pool; a second call does nothing.
    package func close() async {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        await lanes.close()
        await databases.shutdownAsync()
    }
}
