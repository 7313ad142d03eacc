import CSQLiteNIO
import Foundation

/// One connection to the SQLite file through the C API of SQLiteNIO's own copy of SQLite (the
/// `CSQLiteNIO` declarations), with its prepared statements kept for reuse. SQLiteNIO runs every
/// statement as a hop to its thread pool and back to an event loop (~120 µs of context switches each);
/// a whole send batch or a session lookup here is a few microseconds of C calls in one hop.
/// Not thread-safe: one thread at a time uses it, its owner's serial queue (`SQLiteWorker`) or the thread
/// it is lent to (`InlineReaders`, whose lock orders the hand-offs); SQLite is built thread-safe and the
/// connection opened NOMUTEX, which allows exactly that.
final class DirectSQLite: @unchecked Sendable {
    private var handle: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]

    /// `queryOnly` false leaves a read-only connection able to write attached databases (`VACUUM INTO`).
    /// `busyTimeoutMs`: how long a statement waits for a lock before failing with SQLITE_BUSY.
    init(path: String, readOnly: Bool, queryOnly: Bool = true, busyTimeoutMs: Int32 = 5000) throws {
        let flags = (readOnly ? CS_SQLITE_OPEN_READONLY : CS_SQLITE_OPEN_READWRITE) | CS_SQLITE_OPEN_NOMUTEX
        var db: OpaquePointer?
        let rc = sqlite_nio_sqlite3_open_v2(path, &db, flags, nil)
        guard rc == CS_SQLITE_OK, let db else {
            let message = db.flatMap { sqlite_nio_sqlite3_errmsg($0) }.map { String(cString: $0) } ?? "code \(rc)"
            if let db { sqlite_nio_sqlite3_close_v2(db) }
            throw DirectSQLiteError(code: rc, message: "cannot open \(path): \(message)")
        }
        handle = db
        // Wait (sleeping, in SQLite's 1 ms to 100 ms steps) rather than fail while another connection writes.
        sqlite_nio_sqlite3_busy_timeout(db, busyTimeoutMs)
        cs_sqlite_enable_qpsg(db)
        // As the Fluent connections (SQLiteStorage.open): readers never write; the writer commits with
        // synchronous=NORMAL in WAL mode (a commit survives a killed process, not a power loss).
        if !readOnly || queryOnly { try execute(readOnly ? "PRAGMA query_only=1" : "PRAGMA synchronous=NORMAL") }
        // Commits leave checkpoints to SQLiteCheckpointer, which copies the WAL in the background. Under
        // writes without a pause it cannot catch up (a passive checkpoint never reaches frames appended
        // while it runs, and the log starts over only once one has), so past 16000 pages (~64 MB) a
        // commit checkpoints inline after all, and the file is cut back to 64 MB when the log restarts.
        if !readOnly {
            try execute("PRAGMA wal_autocheckpoint=\(SQLiteCheckpointer.inlineAfterPages)")
            try execute("PRAGMA journal_size_limit=\(SQLiteCheckpointer.walSizeLimit)")
        }
    }

    deinit { close() }

    func close() {
        for s in statements.values { sqlite_nio_sqlite3_finalize(s) }
        statements = [:]
        if let handle { sqlite_nio_sqlite3_close_v2(handle) }
        handle = nil
    }

    /// Statements without parameters or results (BEGIN, COMMIT, PRAGMA).
    func execute(_ sql: String) throws {
        try statement(sql).run()
    }

    /// The prepared statement for `sql`, reset and unbound, prepared once per connection.
    func statement(_ sql: String) throws -> DirectStatement {
        if let s = statements[sql] { return DirectStatement(raw: s, connection: self) }
        guard handle != nil else {
            throw DirectSQLiteError(
                code: 21,
                message: "the database connection is closed (the server is shutting down)"
            )
        }
        var s: OpaquePointer?
        let rc = sqlite_nio_sqlite3_prepare_v3(handle, sql, -1, UInt32(CS_SQLITE_PREPARE_PERSISTENT), &s, nil)
        guard rc == CS_SQLITE_OK, let s else { throw error(rc) }
        statements[sql] = s
        return DirectStatement(raw: s, connection: self)
    }

    /// `PRAGMA wal_checkpoint(PASSIVE)`: copies what it can of the WAL without waiting for any lock;
    /// returns the number of frames copied.
    func checkpointPassive() throws -> Int {
        var log: Int32 = 0
        var copied: Int32 = 0
        let rc = sqlite_nio_sqlite3_wal_checkpoint_v2(handle, nil, CS_SQLITE_CHECKPOINT_PASSIVE, &log, &copied)
        guard rc == CS_SQLITE_OK else { throw error(rc) }
        return Int(copied)
    }

    /// True outside a transaction (after COMMIT or ROLLBACK, or when a failed statement rolled it back),
    /// and on a closed connection.
    var autocommit: Bool {
        guard let handle else { return true }
        return sqlite_nio_sqlite3_get_autocommit(handle) != 0
    }

    /// Set by `SQLiteWorker` while it runs the writes of a group inside its own transaction: each
    /// `writeTransaction` is then a savepoint. Never inferred from `autocommit`: a transaction left open
    /// by a failed ROLLBACK must make the next BEGIN fail, not turn later writes into savepoints of a
    /// transaction nobody commits.
    var inGroup = false

    func error(_ rc: Int32) -> DirectSQLiteError {
        DirectSQLiteError(
            code: sqlite_nio_sqlite3_extended_errcode(handle),
            message: sqlite_nio_sqlite3_errmsg(handle).map { String(cString: $0) } ?? "code \(rc)"
        )
    }

    /// Runs `body` in a write transaction taken at once (BEGIN IMMEDIATE): its reads see the state it
    /// writes over, and no other writer can commit between them. Rolled back if `body` throws. Inside a
    /// group commit (`inGroup`, `SQLiteWorker.write`) it is a savepoint instead: rolled back alone,
    /// committed with the group; if the savepoint cannot be rolled back, the whole transaction is (the
    /// group sees that and answers for it), so a failed write never commits half its changes.
    func writeTransaction<T>(_ body: () throws -> T) throws -> T {
        let grouped = inGroup
        try execute(grouped ? "SAVEPOINT write" : "BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute(grouped ? "RELEASE write" : "COMMIT")
            return result
        } catch {
            rollBack(savepoint: grouped)
            throw error
        }
    }

    /// Undoes a failed `writeTransaction` (unless its error already ended the transaction): the savepoint
    /// alone when it can be, else the whole transaction.
    private func rollBack(savepoint: Bool) {
        guard !autocommit else { return }
        if savepoint, (try? execute("ROLLBACK TO write")) != nil, (try? execute("RELEASE write")) != nil { return }
        try? execute("ROLLBACK")
    }
}
