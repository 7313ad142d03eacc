import FluentKit
import SQLKit

/// The store methods both backends serve with the same SQL, through SQLKit (`SQLStores+Accounts.swift`
/// and its siblings). A method either is here, and serves both backends, or is written once per backend
/// (`SQLiteStorage+Accounts.swift`, `PostgresStorage+Accounts.swift`, …) and not here: no backend
/// redefines a method of this extension, so what serves a call is never decided by which definition
/// the compiler prefers.
package protocol SQLStores: Sendable {
    /// The writer, and every read that must see the latest write.
    var database: any Database { get }
    /// Reads that may see any committed state: a reader connection (SQLite), or the pool.
    var reader: any Database { get }
    /// The backend, fixed when the storage opens: how the shared statements take their write
    /// transactions and row locks.
    var dialect: StorageDialect { get }
}

extension SQLStores {
    var sql: any SQLDatabase { database as! any SQLDatabase }

    /// A write transaction on `database`, as this backend takes one: on SQLite the file's write lock at
    /// BEGIN (`immediateTransaction`), on PostgreSQL Fluent's transaction, whose statements lock the rows
    /// they need (`dialect`). Inside a transaction already, the body runs in it.
    func writeTransaction<T: Sendable>(
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> T
    ) async throws -> T {
        switch dialect {
        case .sqlite where !database.inTransaction: try await database.immediateTransaction(body)
        case .sqlite, .postgres: try await database.transaction { try await body($0 as! any SQLDatabase) }
        }
    }
}
