import FluentKit
import SQLKit

extension Database {
    /// A SQLite write transaction that takes the write lock at BEGIN (IMMEDIATE), waiting on the busy
    /// timeout: the storage has a second writer connection (the direct writer), and a DEFERRED
    /// transaction that reads before it writes would fail with SQLITE_BUSY_SNAPSHOT, not wait, whenever
    /// that writer committed in between. The body runs inline on the leased connection (SQLKit's session),
    /// as in Fluent's own transaction: no extra task hop while the one Fluent writer connection is held.
    func immediateTransaction<T: Sendable>(
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> T
    ) async throws -> T {
        let sql = self as! any SQLDatabase
        // The transaction holds the one writer connection from BEGIN to COMMIT, so its statements resume
        // on the writer's own event loop, not the cooperative pool: on a loaded machine every resumption
        // there waited behind other work, and ten queued transactions outlasted the pool's wait (issue 33).
        return try await withTaskExecutorPreference(EventLoopTaskExecutor(eventLoop)) {
            try await sql.withSession { session in
                try await session.raw("BEGIN IMMEDIATE TRANSACTION").run()
                do {
                    let result = try await body(session)
                    try await session.raw("COMMIT TRANSACTION").run()
                    return result
                } catch {
                    try? await session.raw("ROLLBACK TRANSACTION").run()
                    throw error
                }
            }
        }
    }
}
