import Foundation
import Logging
import SQLKit
import Testing

@testable import CountersignServer

/// The WAL is copied into the database file in the background (no commit runs a checkpoint inline).
@Suite(.closesStorage) struct SQLiteCheckpointerTests {
    @Test func theLogIsCheckpointedInTheBackground() async throws {
        let location = try Backend.sqlite.freshLocation()
        guard case .sqlite(let path) = location else { return }
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let database = try await OpenedStorages.open(location, logger: logger)
        do {
            let sql = database.database as! any SQLDatabase
            // Commits checkpoint inline only as a safety net, far beyond SQLite's 1000 pages.
            let auto = try await sql.raw("PRAGMA wal_autocheckpoint").all().first?.decode(
                column: "wal_autocheckpoint",
                as: Int.self
            )
            #expect(auto == SQLiteCheckpointer.inlineAfterPages)
            try await sql.raw("CREATE TABLE scratch (id INTEGER PRIMARY KEY, body BLOB NOT NULL)").run()
            // Bytes 12-15 of the WAL header: the checkpoint sequence, which grows each time the log starts
            // over, and the log starts over only at a write after a checkpoint has copied all of it.
            func sequence() throws -> UInt32 {
                let header = try Data(contentsOf: URL(fileURLWithPath: path + "-wal")).prefix(16)
                return header.count == 16 ? header.suffix(4).reduce(0) { $0 << 8 | UInt32($1) } : 0
            }
            for i in 0..<300 {
                try await sql.raw("INSERT INTO scratch (id, body) VALUES (\(bind: i), zeroblob(4000))").run()
            }
            let before = try sequence()
            // Nothing writes now; the background checkpoint catches up within a few ticks, and the next
            // write starts the log over. Without it (300 frames is far below the inline threshold) the
            // sequence would stay.
            let runs = (database as? SQLiteStorage)?.checkpointer.runs.load(ordering: .relaxed) ?? 0
            for _ in 0..<100
            where ((database as? SQLiteStorage)?.checkpointer.runs.load(ordering: .relaxed) ?? 0) < runs + 1 {
                try await Task.sleep(for: .milliseconds(100))
            }
            // A run that began before the last insert copied only part: the next tick, which sees the WAL
            // changed since, copies the rest.
            try await Task.sleep(for: .milliseconds(600))
            try await sql.raw("INSERT INTO scratch (id, body) VALUES (1000, x'00')").run()
            #expect(try sequence() > before, "the log started over after the background checkpoint")
            let count = try await sql.raw("SELECT COUNT(*) AS n FROM scratch").all().first?.decode(
                column: "n",
                as: Int.self
            )
            #expect(count == 301)
        } catch {
            await database.close()
            throw error
        }
        await database.close()
    }
}
