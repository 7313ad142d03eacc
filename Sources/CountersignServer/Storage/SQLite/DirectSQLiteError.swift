/// A failed SQLite call: the extended result code and SQLite's message (never bound values).
struct DirectSQLiteError: Error, CustomStringConvertible {
    var code: Int32
    var message: String
    var description: String { "SQLite error \(code): \(message)" }
    /// SQLITE_BUSY, whatever its extended code: a lock was not had in time.
    var isBusy: Bool { code & 0xff == 5 }
}
