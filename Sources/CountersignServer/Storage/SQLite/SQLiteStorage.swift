import FluentKit
import FluentSQLiteDriver
import Foundation
import Logging
import NIOCore
import NIOPosix
import SQLKit
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The server's storage on one SQLite file. The Fluent writer has its own one-thread event loop group,
/// hence one connection: every statement goes through it, so transactions never interleave and the busy
/// handler never spins; WAL lets that connection commit without rewriting the main file. The hot paths
/// go to direct connections on SQLiteNIO's own copy of SQLite (`DirectSQLite`), each a whole unit of
/// work in one hop instead of a hop per statement: send batches, acknowledgements and a sign-in's writes
/// to the direct writer (`messageAndSignInWriter`), device-session lookups, the push channel's pages and a
/// sign-in's point reads to the direct readers.
package final class SQLiteStorage: ServerStorage, QueuePageReader {
    let databases: Databases
    package let database: any Database
    let group: MultiThreadedEventLoopGroup
    /// The thread pools the writer's and the readers' statements run on.
    let pools: [NIOThreadPool]
    /// Read-only connections, one per core, on their own threads. In WAL mode they read the last
    /// committed state while the one writer writes, so the hot reads (who is this device session, who
    /// are these recipients) neither wait for nor occupy the writer.
    let readerGroup: MultiThreadedEventLoopGroup
    let readerDatabases: Databases
    private let nextReader = RoundRobin()
    /// The direct writer, with its group commit, named for what it carries: the message writes (send
    /// batches, acknowledgements) and the sign-in writes (lockout, session and audit rows, and the
    /// password changes and session ends that race them). The Fluent writer (`database`) takes the rest.
    let messageAndSignInWriter: SQLiteWorker
    /// Direct read-only connections, one per core, for device-session lookups and push deliveries.
    let sessionReaders: [SQLiteWorker]
    private let nextSessionReader = RoundRobin()
    /// Direct read-only connections for point reads on the caller's thread (`quickRead`).
    let inlineReaders: InlineReaders
    /// Copies the WAL into the file in the background, so that no commit waits for a checkpoint.
    let checkpointer: SQLiteCheckpointer
    package let location: DatabaseLocation
    package var dialect: StorageDialect { .sqlite }
    private let closed = Atomic<Bool>(false)

    static let readers = DatabaseID(string: "sqlite-readers")

    /// Opens (creating if needed) the file at `path`, runs the migrations and opens the direct connections.
    static func open(path: String, logger: Logger, groupCommit: Int) async throws -> SQLiteStorage {
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
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        // SQLiteNIO runs every statement as a blocking call on its Databases' thread pool. The writer and
        // the readers have pools of their own, not NIO's shared singleton (as many threads as cores): a
        // statement waiting out the busy timeout there stalled every other database user of the process,
        // and a writer's transactions queued behind them past the connection pool's 10 s wait.
        let writerPool = NIOThreadPool(numberOfThreads: 1)
        writerPool.start()
        let readerPool = NIOThreadPool(numberOfThreads: max(1, System.coreCount))
        readerPool.start()
        let databases = Databases(threadPool: writerPool, on: group)
        // No query logging at all: bound values include password hashes and the captcha key.
        // The one writer connection is a queue, not a pool that can run dry: a write waits its turn up to
        // `ServerDatabase.queueWait` (then 503 server-busy) rather than Fluent's 10 s, which a burst of
        // registrations on a loaded machine outlasted (issue 33).
        databases.use(
            .sqlite(.file(path), connectionPoolTimeout: ServerDatabase.queueWait, sqlLogLevel: nil),
            as: .sqlite
        )
        let eventLoop = group.any()
        guard let db = databases.database(logger: logger, on: eventLoop) else {
            throw ConfigurationError("the database could not be opened")
        }
        let readerGroup = MultiThreadedEventLoopGroup(numberOfThreads: max(1, System.coreCount))
        let readerDatabases = Databases(threadPool: readerPool, on: readerGroup)
        readerDatabases.use(
            .sqlite(
                .file(path),
                maxConnectionsPerEventLoop: 1,
                connectionPoolTimeout: ServerDatabase.queueWait,
                sqlLogLevel: nil
            ),
            as: Self.readers,
            isDefault: true
        )
        var checkpointer: SQLiteCheckpointer?
        var workers: [SQLiteWorker] = []
        let inlineReaders: InlineReaders
        do {
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
            try await ServerDatabase.migrate(databases, logger: logger, on: eventLoop)
            // Readers may never write, and wait rather than fail while a checkpoint holds the file.
            for loop in readerGroup.makeIterator() {
                guard let reader = readerDatabases.database(Self.readers, logger: logger, on: loop) as? any SQLDatabase
                else { continue }
                try await reader.raw("PRAGMA query_only=1").run()
                try await reader.raw("PRAGMA busy_timeout=5000").run()
            }
            // After the migrations: the direct connections prepare statements over the tables they made.
            checkpointer = try SQLiteCheckpointer(path: path)
            workers.append(
                try SQLiteWorker(
                    label: "countersign.sqlite.messages-and-sign-ins",
                    path: path,
                    readOnly: false,
                    maxGroup: groupCommit
                )
            )
            for i in 0..<max(1, System.coreCount) {
                workers.append(try SQLiteWorker(label: "countersign.sqlite.sessions.\(i)", path: path, readOnly: true))
            }
            inlineReaders = try InlineReaders(path: path, count: 2 * max(1, System.coreCount))
        } catch {
            checkpointer?.close()
            workers.forEach { $0.close() }
            await databases.shutdownAsync()
            await readerDatabases.shutdownAsync()
            try? await group.shutdownGracefully()
            try? await readerGroup.shutdownGracefully()
            try? await writerPool.shutdownGracefully()
            try? await readerPool.shutdownGracefully()
            throw error
        }
        return SQLiteStorage(
            databases: databases,
            database: db,
            group: group,
            pools: [writerPool, readerPool],
            readerGroup: readerGroup,
            readerDatabases: readerDatabases,
            messageAndSignInWriter: workers[0],
            sessionReaders: Array(workers.dropFirst()),
            inlineReaders: inlineReaders,
            checkpointer: checkpointer!,
            location: .sqlite(path: path)
        )
    }

    private init(
        databases: Databases,
        database: any Database,
        group: MultiThreadedEventLoopGroup,
        pools: [NIOThreadPool],
        readerGroup: MultiThreadedEventLoopGroup,
        readerDatabases: Databases,
        messageAndSignInWriter: SQLiteWorker,
        sessionReaders: [SQLiteWorker],
        inlineReaders: InlineReaders,
        checkpointer: SQLiteCheckpointer,
        location: DatabaseLocation
    ) {
        self.databases = databases
        self.database = database
        self.group = group
        self.pools = pools
        self.readerGroup = readerGroup
        self.readerDatabases = readerDatabases
        self.messageAndSignInWriter = messageAndSignInWriter
        self.sessionReaders = sessionReaders
        self.inlineReaders = inlineReaders
        self.checkpointer = checkpointer
        self.location = location
    }

    /// A reader connection, round robin.
    package var reader: any Database {
        let loop = nextReader.pick(Array(readerGroup.makeIterator()))
        return readerDatabases.database(Self.readers, logger: database.logger, on: loop) ?? database
    }

    /// The next direct session reader, round robin.
    var sessionReader: SQLiteWorker {
        nextSessionReader.pick(sessionReaders)
    }

    /// A point read on a direct reader: on this thread when a connection is idle and no lock is in the
    /// way, else one hop to a queued reader (reads are repeatable).
    func quickRead<T: Sendable>(_ work: @escaping @Sendable (DirectSQLite) throws -> T) async throws -> T {
        do {
            if let value = try inlineReaders.read(work) { return value }
        } catch let error as DirectSQLiteError where error.isBusy {}
        return try await sessionReader.run(work)
    }

    // MARK: The hot paths, on the direct connections

    /// One hop to the direct writer per batch, in its group commit (`SQLiteWorker.write`).
    package func store(_ batch: [StoreRequest]) async throws -> [StoreOutcome] {
        guard !batch.isEmpty else { return [] }
        return try await messageAndSignInWriter.write { try DirectSendStore.store($0, batch) }
    }

    /// The send joins the direct writer's next group commit, in a savepoint of its own.
    package func submit(_ request: StoreRequest) async throws -> StoreOutcome {
        try await messageAndSignInWriter.write { try DirectSendStore.store($0, [request])[0] }
    }

    /// One node serves a SQLite file (`SQLiteServeLock`): its signals stay in the process.
    package func pushBus(logger: Logger, deliver: @escaping @Sendable (PushSignal) -> Void) -> any PushBus {
        LocalPushBus(deliver: deliver)
    }

    package func acknowledge(deviceID: String, seqs: [Int64]) async throws -> Int {
        guard !seqs.isEmpty else { return 0 }
        return try await messageAndSignInWriter.write {
            try DirectAckStore.acknowledge($0, deviceID: deviceID, seqs: seqs)
        }
    }

    /// The push channel's page, on a direct reader in one hop.
    package func readPage(_ request: QueuePageRequest) async throws -> (entries: [QueueEntry], more: Bool) {
        try await sessionReader.run { try DirectQueueReader.page($0, request) }
    }

    package func deviceSessionContext(
        tokenHash: String
    ) async throws -> (DeviceSessionRecord, DeviceRecord, AccountRecord)? {
        try await sessionReader.run { try DirectSessionReader.deviceSessionContext($0, tokenHash: tokenHash) }
    }

    /// Closes every connection and thread; a second call does nothing.
    package func close() async {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        checkpointer.close()
        messageAndSignInWriter.close()
        sessionReaders.forEach { $0.close() }
        inlineReaders.close()
        await databases.shutdownAsync()
        await readerDatabases.shutdownAsync()
        try? await group.shutdownGracefully()
        try? await readerGroup.shutdownGracefully()
        for pool in pools { try? await pool.shutdownGracefully() }
    }
}
