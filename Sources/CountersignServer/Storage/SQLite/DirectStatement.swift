import CSQLiteNIO
import Foundation

/// A prepared statement of a `DirectSQLite`; valid until the next use of the same SQL text.
struct DirectStatement {
    let raw: OpaquePointer
    let connection: DirectSQLite

    func bind(_ i: Int32, _ value: String) {
        let n = Int32(value.utf8.count)
        value.withCString { p in _ = cs_sqlite_bind_text(raw, i, p, n) }
    }

    func bind(_ i: Int32, _ value: Int64) { sqlite_nio_sqlite3_bind_int64(raw, i, value) }

    /// NULL for nil.
    func bind(_ i: Int32, _ value: Int64?) {
        if let value { bind(i, value) } else { sqlite_nio_sqlite3_bind_null(raw, i) }
    }

    /// NULL for nil.
    func bind(_ i: Int32, _ value: String?) {
        if let value { bind(i, value) } else { sqlite_nio_sqlite3_bind_null(raw, i) }
    }

    func bind(_ i: Int32, _ bytes: [UInt8]) {
        // A zero-length blob, not NULL: the columns are NOT NULL.
        bytes.withUnsafeBytes { b in
            _ = cs_sqlite_bind_blob(raw, i, b.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(b.count))
        }
    }

    /// Steps once: true when a row is ready, false when done. On an error the statement is reset.
    func step() throws -> Bool {
        switch sqlite_nio_sqlite3_step(raw) {
        case CS_SQLITE_ROW: return true
        case CS_SQLITE_DONE: return false
        case let rc:
            let e = connection.error(rc)
            reset()
            throw e
        }
    }

    /// Steps to the end (a statement whose rows, if any, are not needed) and resets.
    func run() throws {
        while try step() {}
        reset()
    }

    /// Calls `row` for each row, then resets.
    func forEach(_ row: (DirectStatement) throws -> Void) throws {
        defer { reset() }
        while try step() { try row(self) }
    }

    func reset() {
        sqlite_nio_sqlite3_reset(raw)
        sqlite_nio_sqlite3_clear_bindings(raw)
    }

    func isNull(_ i: Int32) -> Bool { sqlite_nio_sqlite3_column_type(raw, i) == 5 }  // SQLITE_NULL
    func int64(_ i: Int32) -> Int64 { sqlite_nio_sqlite3_column_int64(raw, i) }
    func string(_ i: Int32) -> String {
        guard let p = sqlite_nio_sqlite3_column_text(raw, i) else { return "" }
        let n = Int(sqlite_nio_sqlite3_column_bytes(raw, i))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }
    func bytes(_ i: Int32) -> [UInt8] {
        let p = sqlite_nio_sqlite3_column_blob(raw, i)
        let n = Int(sqlite_nio_sqlite3_column_bytes(raw, i))
        guard let p, n > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: n))
    }
}
