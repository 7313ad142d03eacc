import SQLKit

/// Where the statements both backends run differ, fixed when the storage opens (`SQLStores.dialect`):
/// only in their row locks. A PostgreSQL transaction locks the rows it reads before it writes over them;
/// a SQLite write transaction holds the file's one write lock from its BEGIN IMMEDIATE
/// (`SQLiteStorage.writeTransaction`), so it locks no rows and every clause here is empty.
package enum StorageDialect: Sendable {
    case sqlite
    case postgres

    /// Locks the rows read until the transaction ends, against writers and other `FOR UPDATE` readers.
    var forUpdate: SQLQueryString {
        switch self {
        case .sqlite: ""
        case .postgres: " FOR UPDATE"
        }
    }

    /// Locks the rows read against writers until the transaction ends; of `table` alone when given.
    func forShare(of table: String? = nil) -> SQLQueryString {
        switch self {
        case .sqlite: ""
        case .postgres:
            if let table { " FOR SHARE OF \(unsafeRaw: table)" } else { " FOR SHARE" }
        }
    }

    /// `forUpdate`, passing over the rows another transaction holds (concurrent claimers split the work).
    var forUpdateSkipLocked: SQLQueryString {
        switch self {
        case .sqlite: ""
        case .postgres: " FOR UPDATE SKIP LOCKED"
        }
    }
}
