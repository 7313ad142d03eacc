import FluentKit
import Foundation
import SQLKit

/// `MessageStore` over SQLKit, for SQLite and PostgreSQL. A batch of sends is one transaction: each one's
/// device-set check, envelope and queue rows commit together with the others or not at all; on
/// PostgreSQL the accounts involved are locked (`FOR SHARE`) so a device cannot be added, rotated or
/// revoked between check and insert.
public struct SQLMessageStore: MessageStore {
    let db: any Database
    var sql: any SQLDatabase { db as! any SQLDatabase }
    var isPostgres: Bool { sql.dialect.name == "postgresql" }

    public init(database: any Database) { db = database }

    public func store(_ batch: [StoreRequest]) async throws -> [StoreOutcome] {
        guard !batch.isEmpty else { return [] }
        let postgres = isPostgres
        return try await db.transaction { tx in
            let sql = tx as! any SQLDatabase
            if postgres {
                // Every account of the batch, in one fixed order, so concurrent batches cannot deadlock;
                // registrations, rotations and revocations (FOR UPDATE) wait until this commits.
                let accounts = Set(batch.flatMap(\.accountIDs)).sorted()
                try await sql.raw("SELECT id FROM accounts WHERE id IN (\(binds: accounts)) ORDER BY id FOR SHARE").run()
            }
            // Every ID of the batch in one read; most are new.
            var existing: [String: MessageRecord] = [:]
            for row in try await sql.raw("SELECT * FROM messages WHERE id IN (\(binds: Array(Set(batch.map(\.message.id)))))").all() {
                let record = try Self.message(row)
                existing[record.id] = record
            }
            typealias DeviceRow = (id: String, account: String, keyID: String, username: String, signingKeyID: String)
            // Every active device of every account in the batch, in one read: the senders' checks and each
            // message's device set come from it.
            var byAccount: [String: [DeviceRow]] = [:]
            var signingKeyOf: [String: String] = [:]
            for row in try await sql.raw("""
                SELECT d.id, d.account_id, d.encryption_key_id, d.signing_key_id, a.username FROM devices d JOIN accounts a ON a.id = d.account_id
                WHERE d.revoked_at IS NULL AND d.kind = 'messaging' AND d.account_id IN (\(binds: Array(Set(batch.flatMap(\.accountIDs)))))
                """).all() {
                let d: DeviceRow = (try row.decode(column: "id", as: String.self), try row.decode(column: "account_id", as: String.self),
                                    try row.decode(column: "encryption_key_id", as: String.self), try row.decode(column: "username", as: String.self),
                                    try row.decode(column: "signing_key_id", as: String.self))
                byAccount[d.account, default: []].append(d)
                signingKeyOf[d.id] = d.signingKeyID
            }
            var accepted: [String: (MessageRecord, Int)] = [:]
            var messageRows: [SQLQueryString] = []
            var queueRows: [SQLQueryString] = []
            var outcomes: [StoreOutcome] = []
            for r in batch {
                let m = r.message
                // The sender's account is among the accounts read, so an active sending device is in the map.
                guard signingKeyOf[m.senderDeviceID] == r.senderSigningKeyID else { outcomes.append(.senderChanged); continue }
                if let (earlier, _) = accepted[m.id] {
                    outcomes.append(earlier.digest == m.digest && earlier.senderAccountID == m.senderAccountID ? .duplicate(earlier) : .idReused)
                    continue
                }
                if let record = existing[m.id] {
                    outcomes.append(record.digest == m.digest && record.senderAccountID == m.senderAccountID ? .duplicate(record) : .idReused)
                    continue
                }
                let devices = Set(r.accountIDs).flatMap { byAccount[$0] ?? [] }.sorted { $0.id < $1.id }
                let current = Set(devices.map(\.keyID))
                guard current == r.keyIDs else {
                    let missing = devices.filter { !r.keyIDs.contains($0.keyID) }
                        .map { DeviceKeyRefRecord(username: $0.username, deviceID: $0.id, encryptionKeyID: $0.keyID) }
                    outcomes.append(.deviceMismatch(missing: missing, extra: r.keyIDs.subtracting(current).sorted()))
                    continue
                }
                let recipientDevices = devices.filter { $0.account != r.senderAccountID }.count
                var record = m
                record.recipientDevices = recipientDevices
                accepted[m.id] = (record, recipientDevices)
                messageRows.append("""
                    (\(bind: m.id), \(bind: m.senderAccountID), \(bind: m.senderDeviceID), \(bind: m.senderUsername),
                     \(bind: m.recipients.joined(separator: ",")), \(bind: Data(m.envelope)), \(bind: m.digest), \(bind: Int64(m.envelope.count)),
                     \(bind: m.acceptedAt.ms), \(bind: m.deliverAt.ms), \(bind: m.expiresAt.ms), \(bind: Int64(recipientDevices)), 0, 0, 0)
                    """)
                for d in devices {
                    queueRows.append("(\(bind: d.id), \(bind: m.id), \(bind: Int64(d.account == r.senderAccountID ? 0 : 1)), \(bind: m.deliverAt.ms), \(bind: m.expiresAt.ms), 0)")
                }
                outcomes.append(.stored(recipientDevices: recipientDevices))
            }
            // Multi-row inserts in chunks that stay below both databases' bound-parameter limits; in batch
            // order, so each device's queue keeps the order in which sends were accepted.
            for chunk in stride(from: 0, to: messageRows.count, by: 500) {
                try await sql.raw("""
                    INSERT INTO messages (id, sender_account, sender_device, sender_username, recipients, envelope, digest, size, accepted_at,
                                          deliver_at, expires_at, recipient_devices, fetched_by, acked_by, cancelled)
                    VALUES \(messageRows[chunk..<min(chunk + 500, messageRows.count)].joined(separator: ", "))
                    """).run()
            }
            for chunk in stride(from: 0, to: queueRows.count, by: 2000) {
                try await sql.raw("""
                    INSERT INTO message_queue (device_id, message_id, incoming, deliver_at, expires_at, fetched)
                    VALUES \(queueRows[chunk..<min(chunk + 2000, queueRows.count)].joined(separator: ", "))
                    """).run()
            }
            return outcomes
        }
    }

    public func fetch(deviceID: String, after: Int64, excluding: [Int64], limit: Int, maxBytes: Int, now: Date) async throws
        -> (entries: [QueueEntry], more: Bool) {
        try await db.transaction { tx in
            let sql = tx as! any SQLDatabase
            // Sizes first, envelopes only for the entries that fit: a queue of large messages must not be
            // read into memory whole.
            let sized = try await sql.raw("""
                SELECT q.seq, m.size FROM message_queue q JOIN messages m ON m.id = q.message_id
                WHERE q.device_id = \(bind: deviceID) AND q.seq > \(bind: after) AND q.deliver_at <= \(bind: now.ms) AND q.expires_at > \(bind: now.ms)
                \(excluding.isEmpty ? "" : "AND q.seq NOT IN (\(binds: excluding))" as SQLQueryString)
                ORDER BY q.seq LIMIT \(bind: Int64(limit))
                """).all()
            var chosen: [Int64] = []
            var total: Int64 = 0
            for row in sized {
                let size = try row.decode(column: "size", as: Int64.self)
                if !chosen.isEmpty, total + size > Int64(maxBytes) { break }
                total += size
                chosen.append(try row.decode(column: "seq", as: Int64.self))
            }
            guard !chosen.isEmpty else { return ([], false) }
            let rows = try await sql.raw("""
                SELECT q.seq, q.incoming, q.fetched, m.* FROM message_queue q JOIN messages m ON m.id = q.message_id
                WHERE q.device_id = \(bind: deviceID) AND q.seq IN (\(binds: chosen)) ORDER BY q.seq
                """).all()
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
            if !fresh.isEmpty {
                try await sql.raw("UPDATE message_queue SET fetched = 1 WHERE seq IN (\(binds: fresh))").run()
            }
            for (id, n) in firstFetches {
                try await sql.raw("UPDATE messages SET fetched_by = fetched_by + \(bind: n) WHERE id = \(bind: id)").run()
            }
            return (entries, chosen.count < sized.count || sized.count == limit)
        }
    }

    public func acknowledge(deviceID: String, seqs: [Int64]) async throws -> Int {
        guard !seqs.isEmpty else { return 0 }
        return try await db.transaction { tx in
            let sql = tx as! any SQLDatabase
            let rows = try await sql.raw("""
                DELETE FROM message_queue WHERE device_id = \(bind: deviceID) AND seq IN (\(binds: seqs)) RETURNING message_id, incoming, fetched
                """).all()
            var acked: [String: Int64] = [:], fetched: [String: Int64] = [:]
            for row in rows where try row.decode(column: "incoming", as: Int64.self) != 0 {
                let id = try row.decode(column: "message_id", as: String.self)
                acked[id, default: 0] += 1
                if try row.decode(column: "fetched", as: Int64.self) == 0 { fetched[id, default: 0] += 1 }
            }
            for (id, n) in acked {
                try await sql.raw("""
                    UPDATE messages SET acked_by = acked_by + \(bind: n), fetched_by = fetched_by + \(bind: fetched[id] ?? 0) WHERE id = \(bind: id)
                    """).run()
            }
            return rows.count
        }
    }

    public func cancel(messageID: String, senderAccountID: String, now: Date) async throws -> CancelOutcome {
        try await db.transaction { tx in
            let sql = tx as! any SQLDatabase
            guard let row = try await sql.raw("""
                SELECT * FROM messages WHERE id = \(bind: messageID) AND sender_account = \(bind: senderAccountID)
                """).first() else { return .notFound }
            let m = try Self.message(row)
            guard !m.cancelled else { return .cancelled }
            guard m.deliverAt > now else { return .alreadyDelivered }
            try await sql.raw("DELETE FROM message_queue WHERE message_id = \(bind: messageID)").run()
            // The ciphertext goes too: a cancelled message is kept only as a record that it was cancelled.
            try await sql.raw("UPDATE messages SET cancelled = 1, envelope = \(bind: Data()) WHERE id = \(bind: messageID)").run()
            return .cancelled
        }
    }

    public func message(id: String) async throws -> MessageRecord? {
        try await sql.raw("SELECT * FROM messages WHERE id = \(bind: id)").first().map(Self.message)
    }

    public func allMessages(limit: Int) async throws -> [MessageRecord] {
        try await sql.raw("SELECT * FROM messages ORDER BY accepted_at DESC, id LIMIT \(bind: Int64(limit))").all().map(Self.message)
    }

    public func purgeExpiredMessages(now: Date) async throws {
        try await sql.raw("DELETE FROM message_queue WHERE expires_at <= \(bind: now.ms)").run()
        try await sql.raw("DELETE FROM messages WHERE expires_at <= \(bind: now.ms)").run()
    }

    static func message(_ row: any SQLRow) throws -> MessageRecord {
        let recipients = try row.decode(column: "recipients", as: String.self)
        return MessageRecord(id: try row.decode(column: "id", as: String.self),
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
                             cancelled: try row.decode(column: "cancelled", as: Int64.self) != 0)
    }
}
