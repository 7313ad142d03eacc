import FluentKit
import Foundation
import SQLKit

/// One page of a device's queue, as `MessageStore.fetch` asks for it: its due entries after `after`
/// but `excluding`, oldest first, at most `limit` of them and `maxBytes` of envelopes (at least one).
package struct QueuePageRequest: Sendable {
    package var deviceID: String
    package var after: Int64
    package var excluding: [Int64]
    package var limit: Int
    package var maxBytes: Int
    package var now: Date
}

/// A backend's own read of a queue page that records nothing: the push channel's reads (SQLite on a
/// direct reader, `SQLiteStorage.readPage`; PostgreSQL on the pool, `PostgresStorage+Messages.swift`).
/// A fetch that records first fetches writes, and is the same SQL on both (`SQLStores.recordedPage`).
package protocol QueuePageReader: SQLStores {
    func readPage(_ request: QueuePageRequest) async throws -> (entries: [QueueEntry], more: Bool)
}

extension QueuePageReader {
    package func fetch(
        deviceID: String,
        after: Int64,
        excluding: [Int64],
        limit: Int,
        maxBytes: Int,
        now: Date,
        recordFetch: Bool
    ) async throws
        -> (entries: [QueueEntry], more: Bool)
    {
        let request = QueuePageRequest(
            deviceID: deviceID,
            after: after,
            excluding: excluding,
            limit: limit,
            maxBytes: maxBytes,
            now: now
        )
        // The push channel reads without writing: no write lock taken per delivery (the first-fetch
        // receipt is counted when the device acknowledges instead).
        guard recordFetch else { return try await readPage(request) }
        return try await recordedPage(request)
    }
}

/// The message statements both backends run. Each backend writes the send batch its own way
/// (`DirectSendStore`, `PostgresSendStore`) with the same `SendBatchPlan`, and writes acknowledgements
/// and reads the push channel's pages its own way (`SQLiteStorage`, `PostgresStorage+Messages.swift`).
extension SQLStores {
    /// A page that records its first fetches (`fetch` with `recordFetch` true).
    func recordedPage(_ r: QueuePageRequest) async throws -> (entries: [QueueEntry], more: Bool) {
        // Most fetches (a long poll's turns, an idle device's checks, a device fetching again what it has
        // not acknowledged) have no first fetch to record: a read says so, and the page is read without
        // taking the write lock every send needs.
        let reader = self.reader as! any SQLDatabase
        guard
            try await reader.raw(
                """
                SELECT 1 AS due FROM message_queue
                WHERE device_id = \(bind: r.deviceID) AND seq > \(bind: r.after) AND deliver_at <= \(bind: r.now.ms)
                  AND expires_at > \(bind: r.now.ms) AND fetched = 0 LIMIT 1
                """
            ).first() != nil
        else {
            return try await Self.page(reader, r, recordFetch: false)
        }
        return try await writeTransaction { sql in try await Self.page(sql, r, recordFetch: true) }
    }

    static func page(
        _ sql: any SQLDatabase,
        _ r: QueuePageRequest,
        recordFetch: Bool
    ) async throws -> (entries: [QueueEntry], more: Bool) {
        let (deviceID, after, excluding, limit, maxBytes, now) = (
            r.deviceID, r.after, r.excluding, r.limit, r.maxBytes, r.now
        )
        do {
            // Sizes first, envelopes only for the entries that fit: a queue of large messages must not be
            // read into memory whole.
            let sized = try await sql.raw(
                """
                SELECT q.seq, m.size FROM message_queue q JOIN messages m ON m.id = q.message_id
                WHERE q.device_id = \(bind: deviceID) AND q.seq > \(bind: after) AND q.deliver_at <= \(bind: now.ms) AND q.expires_at > \(bind: now.ms)
                \(excluding.isEmpty ? "" : "AND q.seq NOT IN (\(binds: excluding))" as SQLQueryString)
                ORDER BY q.seq LIMIT \(bind: Int64(limit))
                """
            ).all()
            var chosen: [Int64] = []
            var total: Int64 = 0
            for row in sized {
                let size = try row.decode(column: "size", as: Int64.self)
                if !chosen.isEmpty, total + size > Int64(maxBytes) { break }
                total += size
                chosen.append(try row.decode(column: "seq", as: Int64.self))
            }
            guard !chosen.isEmpty else { return ([], false) }
            let rows = try await sql.raw(
                """
                SELECT q.seq, q.incoming, q.fetched, m.* FROM message_queue q JOIN messages m ON m.id = q.message_id
                WHERE q.device_id = \(bind: deviceID) AND q.seq IN (\(binds: chosen)) ORDER BY q.seq
                """
            ).all()
            var entries: [QueueEntry] = []
            var firstFetches: [String: Int64] = [:]
            var fresh: [Int64] = []
            for row in rows {
                let message = try Self.message(row)
                let seq = try row.decode(column: "seq", as: Int64.self)
                let incoming = try row.decode(column: "incoming", as: Int64.self) != 0
                if try row.decode(column: "fetched", as: Int64.self) == 0 {
                    fresh.append(seq)
                    if incoming { firstFetches[message.id, default: 0] += 1 }
                }
                entries.append(QueueEntry(seq: seq, incoming: incoming, message: message))
            }
            if recordFetch, !fresh.isEmpty {
                try await sql.raw("UPDATE message_queue SET fetched = 1 WHERE seq IN (\(binds: fresh))").run()
            }
            for (id, n) in firstFetches where recordFetch {
                try await sql.raw("UPDATE messages SET fetched_by = fetched_by + \(bind: n) WHERE id = \(bind: id)")
                    .run()
            }
            return (entries, chosen.count < sized.count || sized.count == limit)
        }
    }

    package func cancel(messageID: String, senderAccountID: String, now: Date) async throws -> CancelOutcome {
        try await writeTransaction { sql in
            guard
                let row = try await sql.raw(
                    """
                    SELECT * FROM messages WHERE id = \(bind: messageID) AND sender_account = \(bind: senderAccountID)
                    """
                ).first()
            else { return .notFound }
            let m = try Self.message(row)
            guard !m.cancelled else { return .cancelled }
            guard m.deliverAt > now else { return .alreadyDelivered }
            try await sql.raw("DELETE FROM message_queue WHERE message_id = \(bind: messageID)").run()
            // The ciphertext goes too: a cancelled message is kept only as a record that it was cancelled.
            try await sql.raw(
                "UPDATE messages SET cancelled = 1, envelope = \(bind: Data()) WHERE id = \(bind: messageID)"
            ).run()
            return .cancelled
        }
    }

    package func storedBytes(senderAccountID: String, now: Date) async throws -> MessageQuota.Usage {
        // Reads only: on a reader connection when there is one (index messages_sender covers it).
        let reader = self.reader as! any SQLDatabase
        let row = try await reader.raw(
            """
            SELECT CAST(COALESCE(SUM(size), 0) AS BIGINT) AS bytes, MIN(expires_at) AS oldest FROM messages
            WHERE sender_account = \(bind: senderAccountID) AND expires_at > \(bind: now.ms) AND cancelled = 0
            """
        ).first()
        let bytes = try row?.decode(column: "bytes", as: Int64.self) ?? 0
        let oldest = try row?.decode(column: "oldest", as: Int64?.self)
        return MessageQuota.Usage(bytes: bytes, oldestExpiry: oldest.map { Date(ms: $0) })
    }

    package func message(id: String) async throws -> MessageRecord? {
        try await sql.raw("SELECT * FROM messages WHERE id = \(bind: id)").first().map(Self.message)
    }

    package func allMessages(limit: Int) async throws -> [MessageRecord] {
        try await sql.raw("SELECT * FROM messages ORDER BY accepted_at DESC, id LIMIT \(bind: Int64(limit))").all().map(
            Self.message
        )
    }

    package func purgeExpiredMessages(now: Date) async throws {
        try await sql.raw("DELETE FROM message_queue WHERE expires_at <= \(bind: now.ms)").run()
        try await sql.raw("DELETE FROM messages WHERE expires_at <= \(bind: now.ms)").run()
    }

    static func message(_ row: any SQLRow) throws -> MessageRecord {
        let recipients = try row.decode(column: "recipients", as: String.self)
        return MessageRecord(
            id: try row.decode(column: "id", as: String.self),
            senderAccountID: try row.decode(column: "sender_account", as: String.self),
            senderDeviceID: try row.decode(column: "sender_device", as: String.self),
            senderUsername: try row.decode(column: "sender_username", as: String.self),
            recipients: recipients.isEmpty ? [] : recipients.split(separator: ",").map(String.init),
            envelope: Array(try row.decode(column: "envelope", as: Data.self)),
            digest: try row.decode(column: "digest", as: String.self),
            acceptedAt: Date(ms: try row.decode(column: "accepted_at", as: Int64.self)),
            deliverAt: Date(ms: try row.decode(column: "deliver_at", as: Int64.self)),
            expiresAt: Date(ms: try row.decode(column: "expires_at", as: Int64.self)),
            recipientDevices: Int(try row.decode(column: "recipient_devices", as: Int64.self)),
            fetchedBy: Int(try row.decode(column: "fetched_by", as: Int64.self)),
            acknowledgedBy: Int(try row.decode(column: "acked_by", as: Int64.self)),
            cancelled: try row.decode(column: "cancelled", as: Int64.self) != 0
        )
    }
}
