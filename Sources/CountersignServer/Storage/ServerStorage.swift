import FluentKit
import Logging
import NIOCore

/// The server's storage: one value per backend (`SQLiteStorage`, `PostgresStorage`), each implementing
/// every feature's store in full, the shared SQL (`SQLStores`) and its own hot paths. `serve`, the admin
/// commands, tests and benchmarks all open it with `ServerDatabase.open`.
package protocol ServerStorage: SQLStores, AccountStore, AuditStore, DeviceStore, MessageStore, MFAStore, PasskeyStore,
    PushStore, SessionStore, SessionBindingStore, SignInStore, CaptchaStore, OIDCStore, NotificationStore
{
    var location: DatabaseLocation { get }
    /// The push signals' bus between the nodes serving this database (PostgreSQL: LISTEN/NOTIFY; a
    /// SQLite file has one node, so its bus is local); `deliver` hands a signal to this node's connections.
    func pushBus(logger: Logger, deliver: @escaping @Sendable (PushSignal) -> Void) -> any PushBus
    /// Closes every connection and stops the storage's threads.
    func close() async
}

package enum ServerDatabase {
    /// How long a request waits for a database connection (SQLite's one writer, a PostgreSQL pool's
    /// connections) before it is answered 503 `server-busy`: long enough for a burst on a loaded machine,
    /// as long as a request body may take to arrive.
    static let queueWait: TimeAmount = .seconds(30)

    /// Opens the storage of `location` and runs the migrations: the one place a backend is chosen.
    /// `groupCommit`: at most this many writes share one group commit (`MessageStore.submit`).
    package static func open(
        _ location: DatabaseLocation,
        logger configured: Logger,
        groupCommit: Int = 128
    ) async throws -> any ServerStorage {
        // PostgreSQL logs statements at trace; never let that reach the output, whatever the log level.
        var logger = configured
        if logger.logLevel < .info { logger.logLevel = .info }
        do {
            switch location {
            case .sqlite(let path):
                return try await SQLiteStorage.open(path: path, logger: logger, groupCommit: max(1, groupCommit))
            case .postgres(let url):
                return try await PostgresStorage.open(url: url, logger: logger, groupCommit: max(1, groupCommit))
            }
        } catch let e as ConfigurationError {
            throw e
        } catch {
            throw ConfigurationError("cannot open \(location): \(DatabaseFailure.describe(error, location: location))")
        }
    }

    static func migrate(_ databases: Databases, logger: Logger, on eventLoop: any EventLoop) async throws {
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
    }
}
