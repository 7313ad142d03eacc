import FluentKit
import Foundation
import PostgresNIO
import SQLKit

/// `MessageStore` over SQLKit, for SQLite and PostgreSQL. A batch of sends is one transaction: each one's
/// device-set check, envelope and queue rows commit together with the others or not at all. Batches go
/// to `PostgresSendStore` on PostgreSQL (prepared statements; the accounts involved are locked
/// `FOR SHARE` so a device cannot be added, rotated or revoked between check and insert) and, with a
/// `writer` (the server on SQLite), to the direct SQLite writer (`DirectSendStore`: one hop per batch,
/// BEGIN IMMEDIATE). All three decide with the same `SendBatchPlan`.
public struct SQLMessageStore: MessageStore {
    let db: any Database
    let writer: SQLiteWorker?
    /// Where reads that may see any committed state go (the push channel's reads); the writer when nil.
    let readers: (@Sendable () -> any Database)?
    var sql: any SQLDatabase { db as! any SQLDatabase }
    var isPostgres: Bool { sql.dialect.name == "postgresql" }

    /// SQLite: the direct read-only connections, round robin (push deliveries read there in one hop).
    let directReaders: (@Sendable () -> SQLiteWorker?)?

    /// PostgreSQL: the connection and thread send batches run on (the server's); the pool when nil.
    let sendLane: PostgresLane?
    public var sendExecutor: (any TaskExecutor)? { sendLane?.executor }

    public init(database: any Database) {
        db = database
        writer = nil
        readers = nil
        directReaders = nil
        sendLane = nil
    }
    init(
        database: any Database,
        writer: SQLiteWorker?,
        readers: (@Sendable () -> any Database)? = nil,
        directReaders: (@Sendable () -> SQLiteWorker?)? = nil,
        sendLane: PostgresLane? = nil
    ) {
        db = database
        self.writer = writer
        self.readers = readers
        self.directReaders = directReaders
        self.sendLane = sendLane
    }

    public func store(_ batch: [StoreRequest]) async throws -> [StoreOutcome] {
        guard !batch.isEmpty else { return [] }
        if let writer { return try await writer.write { try DirectSendStore.store($0, batch) } }
        if let sendLane {
            return try await sendLane.run { c, logger in try await PostgresSendStore.store(c, batch, logger: logger) }
        }
        if isPostgres, let postgres = db as? any PostgresDatabase {
            return try await postgres.withLeasedConnection { c, logger in
                try await PostgresSendStore.store(c, batch, logger: logger)
            }
        }
        // SQLite through SQLKit (a store opened without the direct writer): the single Fluent writer
        // connection runs the transaction, BEGIN IMMEDIATE, so nothing changes between reads and inserts.
        return try await db.writeTransaction { sql in
            let usernames = SendBatchPlan.usernames(batch)
            // Every ID of the batch in one read; most are new.
            var existing: [String: MessageRecord] = [:]
            for row in try await sql.raw(
                "SELECT * FROM messages WHERE id IN (\(binds: Array(Set(batch.map(\.message.id)))))"
            ).all() {
                let record = try Self.message(row)
                existing[record.id] = record
            }
            // Every account the batch names, each with every active device, in one read: unknown names,
            // the senders' checks and each message's device set come from it.
            var accounts: [SendBatchPlan.AccountDevice] = []
            for row in try await sql.raw(
                """
                SELECT a.id AS account_id, a.username, d.id, d.encryption_key_id, d.signing_key_id
                FROM accounts a LEFT JOIN devices d ON d.account_id = a.id AND d.revoked_at IS NULL AND d.kind = 'messaging'
                WHERE a.username IN (\(binds: usernames))
                """
            ).all() {
                let device = try row.decode(column: "id", as: String?.self).map { id in
                    (
                        id: id, encryptionKeyID: try row.decode(column: "encryption_key_id", as: String.self),
                        signingKeyID: try row.decode(column: "signing_key_id", as: String.self)
                    )
                }
                accounts.append(
                    .init(
                        accountID: try row.decode(column: "account_id", as: String.self),
                        username: try row.decode(column: "username", as: String.self),
                        device: device
                    )
                )
            }
            let plan = SendBatchPlan(batch: batch, existing: existing, accounts: accounts)
            let messageRows: [SQLQueryString] = plan.messages.map { m in
                """
                (\(bind: m.id), \(bind: m.senderAccountID), \(bind: m.senderDeviceID), \(bind: m.senderUsername),
                 \(bind: m.recipients.joined(separator: ",")), \(bind: Data(m.envelope)), \(bind: m.digest), \(bind: Int64(m.envelope.count)),
                 \(bind: m.acceptedAt.ms), \(bind: m.deliverAt.ms), \(bind: m.expiresAt.ms), \(bind: Int64(m.recipientDevices)), 0, 0, 0)
                """
            }
            let queueRows: [SQLQueryString] = plan.queue.map { q in
                "(\(bind: q.deviceID), \(bind: q.messageID), \(bind: Int64(q.incoming ? 1 : 0)), \(bind: q.deliverAt.ms), \(bind: q.expiresAt.ms), 0)"
            }
            // Multi-row inserts in chunks that stay below both databases' bound-parameter limits; in batch
            // order, so each device's queue keeps the order in which sends were accepted.
            for chunk in stride(from: 0, to: messageRows.count, by: 500) {
                try await sql.raw(
                    """
                    INSERT INTO messages (id, sender_account, sender_device, sender_username, recipients, envelope, digest, size, accepted_at,
                                          deliver_at, expires_at, recipient_devices, fetched_by, acked_by, cancelled)
                    VALUES \(messageRows[chunk..<min(chunk + 500, messageRows.count)].joined(separator: ", "))
                    """
                ).run()
            }
            for chunk in stride(from: 0, to: queueRows.count, by: 2000) {
                try await sql.raw(
                    """
                    INSERT INTO message_queue (device_id, message_id, incoming, deliver_at, expires_at, fetched)
                    VALUES \(queueRows[chunk..<min(chunk + 2000, queueRows.count)].joined(separator: ", "))
                    """
                ).run()
            }
            return plan.outcomes
        }
    }

    public func fetch(
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
        // The push channel reads without writing: on a reader connection, no write lock taken per delivery
        // (the first-fetch receipt is counted when the device acknowledges instead).
        guard recordFetch else {
            if let direct = directReaders?() {
                return try await direct.run {
                    try DirectQueueReader.page(
                        $0,
                        deviceID: deviceID,
                        after: after,
                        excluding: excluding,
                        limit: limit,
                        maxBytes: maxBytes,
                        now: now
                    )
                }
            }
            let reader = (readers?() ?? db) as! any SQLDatabase
            return try await Self.page(
                reader,
                deviceID: deviceID,
                after: after,
                excluding: excluding,
                limit: limit,
                maxBytes: maxBytes,
                now: now,
                recordFetch: false
            )
        }
        // Most fetches (a long poll's turns, an idle device's checks, a device fetching again what it has
        // not acknowledged) have no first fetch to record: a read says so, and the page is read without
        // taking the write lock every send needs.
        let reader = (readers?() ?? db) as! any SQLDatabase
        guard
            try await reader.raw(
                """
                SELECT 1 AS due FROM message_queue
                WHERE device_id = \(bind: deviceID) AND seq > \(bind: after) AND deliver_at <= \(bind: now.ms) AND expires_at > \(bind: now.ms)
                  AND fetched = 0 LIMIT 1
                """
            ).first() != nil
        else {
            return try await Self.page(
                reader,
                deviceID: deviceID,
                after: after,
                excluding: excluding,
                limit: limit,
                maxBytes: maxBytes,
                now: now,
                recordFetch: false
            )
        }
        return try await db.writeTransaction { sql in
            try await Self.page(
                sql,
                deviceID: deviceID,
                after: after,
                excluding: excluding,
                limit: limit,
                maxBytes: maxBytes,
                now: now,
                recordFetch: true
            )
        }
    }

    private static func page(
        _ sql: any SQLDatabase,
        deviceID: String,
        after: Int64,
        excluding: [Int64],
        limit: Int,
        maxBytes: Int,
        now: Date,
        recordFetch: Bool
    ) async throws -> (entries: [QueueEntry], more: Bool) {
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

    public func acknowledge(deviceID: String, seqs: [Int64]) async throws -> Int {
        guard !seqs.isEmpty else { return 0 }
        if let writer {
            return try await writer.write { try DirectAckStore.acknowledge($0, deviceID: deviceID, seqs: seqs) }
        }
        return try await db.writeTransaction { sql in
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

    public func cancel(messageID: String, senderAccountID: String, now: Date) async throws -> CancelOutcome {
        try await db.writeTransaction { sql in
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

    public func storedBytes(senderAccountID: String, now: Date) async throws -> MessageQuota.Usage {
        // Reads only: on a reader connection when there is one (index messages_sender covers it).
        let reader = (readers?() ?? db) as! any SQLDatabase
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

    public func message(id: String) async throws -> MessageRecord? {
        try await sql.raw("SELECT * FROM messages WHERE id = \(bind: id)").first().map(Self.message)
    }

    public func allMessages(limit: Int) async throws -> [MessageRecord] {
        try await sql.raw("SELECT * FROM messages ORDER BY accepted_at DESC, id LIMIT \(bind: Int64(limit))").all().map(
            Self.message
        )
    }

    public func purgeExpiredMessages(now: Date) async throws {
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
