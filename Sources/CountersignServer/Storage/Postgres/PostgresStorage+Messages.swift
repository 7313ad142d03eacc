import FluentKit
import Foundation
import SQLKit

/// The push channel's reads and the acknowledgements on PostgreSQL, on the pool (SQLite's are on its
/// direct connections: `SQLiteStorage.readPage`, `DirectQueueReader`, `DirectAckStore`). A fetch that
/// records first fetches is the shared `recordedPage` (`SQLStores+Messages.swift`).
extension PostgresStorage: QueuePageReader {
    /// The push channel's page, on the pool's connections.
    package func readPage(_ request: QueuePageRequest) async throws -> (entries: [QueueEntry], more: Bool) {
        try await Self.page(reader as! any SQLDatabase, request, recordFetch: false)
    }

    package func acknowledge(deviceID: String, seqs: [Int64]) async throws -> Int {
        guard !seqs.isEmpty else { return 0 }
        return try await writeTransaction { sql in
            let rows = try await sql.raw(
                """
                DELETE FROM message_queue WHERE device_id = \(bind: deviceID) AND seq IN (\(binds: seqs)) RETURNING message_id, incoming, fetched
                """
            ).all()
            var acked: [String: Int64] = [:]
            var fetched: [String: Int64] = [:]
            for row in rows where try row.decode(column: "incoming", as: Int64.self) != 0 {
                let id = try row.decode(column: "message_id", as: String.self)
                acked[id, default: 0] += 1
                if try row.decode(column: "fetched", as: Int64.self) == 0 { fetched[id, default: 0] += 1 }
            }
            for (id, n) in acked {
                try await sql.raw(
                    """
                    UPDATE messages SET acked_by = acked_by + \(bind: n), fetched_by = fetched_by + \(bind: fetched[id] ?? 0) WHERE id = \(bind: id)
                    """
                ).run()
            }
            return rows.count
        }
    }
}
