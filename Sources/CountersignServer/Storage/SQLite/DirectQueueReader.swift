import Foundation

/// A device's due queue entries for the push channel, read on a direct read-only connection in one hop
/// (the Fluent reader takes a thread-pool hop and an event-loop hop per statement, two statements a
/// delivery): `SQLiteStorage.readPage`, the same page as the shared `SQLStores.page`
/// (`SQLStores+Messages.swift`) with `recordFetch: false`, which writes nothing.
enum DirectQueueReader {
    /// Due entries after `after`, oldest first, with their sizes. The in-flight entries to skip are
    /// dropped here rather than bound as a list, so that the statement is prepared once.
    static let due = """
        SELECT q.seq, m.size FROM message_queue q JOIN messages m ON m.id = q.message_id
        WHERE q.device_id = ?1 AND q.seq > ?2 AND q.deliver_at <= ?3 AND q.expires_at > ?3
        ORDER BY q.seq LIMIT ?4
        """
    static let entry = """
        SELECT m.id, m.sender_account, m.sender_device, m.sender_username, m.recipients, m.envelope, m.digest, m.accepted_at, m.deliver_at,
               m.expires_at, m.recipient_devices, m.fetched_by, m.acked_by, m.cancelled, q.incoming
        FROM message_queue q JOIN messages m ON m.id = q.message_id WHERE q.device_id = ?1 AND q.seq = ?2
        """

    static func page(_ c: DirectSQLite, _ r: QueuePageRequest) throws -> (entries: [QueueEntry], more: Bool) {
        let (deviceID, after, excluding, limit, maxBytes, now) = (
            r.deviceID, r.after, r.excluding, r.limit, r.maxBytes, r.now
        )
        let skip = Set(excluding)
        var sized: [(seq: Int64, size: Int64)] = []
        let due = try c.statement(due)
        due.bind(1, deviceID)
        due.bind(2, after)
        due.bind(3, now.ms)
        due.bind(4, Int64(limit + skip.count))
        try due.forEach { row in
            let seq = row.int64(0)
            if !skip.contains(seq), sized.count < limit { sized.append((seq, row.int64(1))) }
        }
        // Sizes first, envelopes only for the entries that fit: a queue of large messages is not read whole.
        var chosen: [Int64] = []
        var total: Int64 = 0
        for s in sized {
            if !chosen.isEmpty, total + s.size > Int64(maxBytes) { break }
            total += s.size
            chosen.append(s.seq)
        }
        var entries: [QueueEntry] = []
        let entry = try c.statement(entry)
        for seq in chosen {
            entry.bind(1, deviceID)
            entry.bind(2, seq)
            try entry.forEach { row in
                entries.append(
                    QueueEntry(seq: seq, incoming: row.int64(14) != 0, message: DirectSendStore.message(row))
                )
            }
        }
        return (entries, chosen.count < sized.count || sized.count == limit)
    }
}
