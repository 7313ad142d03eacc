import Foundation

/// Acknowledgements written by the direct SQLite writer, on the same serial queue as send batches: an
/// acknowledgement never holds the write lock while a send batch wants it. Two writer connections on one
/// file wait for each other through SQLite's busy handler, which sleeps 1 to 100 ms at a time: with
/// acknowledgements on the Fluent writer, a send batch that met one could wait tens of milliseconds.
enum DirectAckStore {
    static let delete =
        "DELETE FROM message_queue WHERE device_id = ?1 AND seq = ?2 RETURNING message_id, incoming, fetched"
    static let receipts = "UPDATE messages SET acked_by = acked_by + ?2, fetched_by = fetched_by + ?3 WHERE id = ?1"

    /// Deletes this device's entries `seqs` and counts the receipts; returns how many entries went.
    static func acknowledge(_ c: DirectSQLite, deviceID: String, seqs: [Int64]) throws -> Int {
        guard !seqs.isEmpty else { return 0 }
        return try c.writeTransaction {
            var acked: [String: Int64] = [:]
            var fetched: [String: Int64] = [:]
            var deleted = 0
            let delete = try c.statement(delete)
            for seq in Set(seqs) {
                delete.bind(1, deviceID)
                delete.bind(2, seq)
                try delete.forEach { row in
                    deleted += 1
                    guard row.int64(1) != 0 else { return }
                    let id = row.string(0)
                    acked[id, default: 0] += 1
                    if row.int64(2) == 0 { fetched[id, default: 0] += 1 }
                }
            }
            let update = try c.statement(receipts)
            for (id, n) in acked {
                update.bind(1, id)
                update.bind(2, n)
                update.bind(3, fetched[id] ?? 0)
                try update.run()
            }
            return deleted
        }
    }
}
