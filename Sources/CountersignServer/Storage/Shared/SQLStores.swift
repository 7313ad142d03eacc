import FluentKit
import SQLKit

/// The store methods both backends run the same way, through SQLKit (`SQLStores+Accounts.swift` and its
/// siblings): every method of every feature's store but the few each backend does its own way
/// (`SQLiteStorage`, `PostgresStorage`).
package protocol SQLStores: Sendable {
    /// The writer, and every read that must see the latest write.
    var database: any Database { get }
    /// Reads that may see any committed state: a reader connection (SQLite), or the pool.
    var reader: any Database { get }
}

extension SQLStores {
    var sql: any SQLDatabase { database as! any SQLDatabase }
    var isPostgres: Bool { sql.dialect.name == "postgresql" }
}
