import Foundation

/// A `DirectSQLite` connection and the serial queue that alone uses it: callers hand it a whole unit of
/// work (a session lookup, a send batch) and are resumed once, instead of hopping per statement.
final class SQLiteWorker: Sendable {
    private let queue: DispatchQueue
    private let connection: DirectSQLite

    init(label: String, path: String, readOnly: Bool) throws {
        queue = DispatchQueue(label: label)
        connection = try DirectSQLite(path: path, readOnly: readOnly)
    }

    func run<T: Sendable>(_ work: @escaping @Sendable (DirectSQLite) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in
            queue.async { c.resume(with: Result { try work(self.connection) }) }
        }
    }

    /// Closes the connection after any work already queued.
    func close() {
        queue.sync { connection.close() }
    }
}
