import FluentKit
import SQLKit

extension Database {
    /// A write transaction. On SQLite it takes the write lock at BEGIN (IMMEDIATE), waiting on the busy
    /// timeout: the server has a second writer connection (the direct send writer), and a DEFERRED
    /// transaction that reads before it writes would fail with SQLITE_BUSY_SNAPSHOT, not wait, whenever
    /// that writer committed in between. On PostgreSQL, Fluent's transaction.
    func writeTransaction<T: Sendable>(_ body: @escaping @Sendable (any Database) async throws -> T) async throws -> T {
        guard !inTransaction, let sql = self as? any SQLDatabase, sql.dialect.name == "sqlite" else { return try await transaction(body) }
        return try await withConnection { conn in
            let tx = conn as! any SQLDatabase
            try await tx.raw("BEGIN IMMEDIATE TRANSACTION").run()
            do {
                let result = try await body(conn)
                try await tx.raw("COMMIT TRANSACTION").run()
                return result
            } catch {
                try? await tx.raw("ROLLBACK TRANSACTION").run()
                throw error
            }
        }
    }
}
