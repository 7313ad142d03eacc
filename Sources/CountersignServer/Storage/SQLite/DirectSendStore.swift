import Foundation

/// A batch of sends written by the direct SQLite writer: BEGIN IMMEDIATE, the reads, the checks
/// (`SendBatchPlan`, the same code as PostgreSQL's), the inserts and COMMIT, all in one hop to the
/// writer's thread with statements prepared once (in a group commit, `SQLiteWorker.write`, a savepoint
/// of the group's BEGIN IMMEDIATE … COMMIT). IMMEDIATE takes the write lock before the reads, so no
/// other connection can add, rotate or revoke a device between the device-set check and the inserts.
enum DirectSendStore {
    static let accountDevices = """
        SELECT a.id, a.username, d.id, d.encryption_key_id, d.signing_key_id
        FROM accounts a LEFT JOIN devices d ON d.account_id = a.id AND d.revoked_at IS NULL AND d.kind = 'messaging' WHERE a.username = ?1
        """
    static let messageByID = """
        SELECT id, sender_account, sender_device, sender_username, recipients, envelope, digest, accepted_at, deliver_at, expires_at,
               recipient_devices, fetched_by, acked_by, cancelled
        FROM messages WHERE id = ?1
        """
    static let insertMessage = """
        INSERT INTO messages (id, sender_account, sender_device, sender_username, recipients, envelope, digest, size, accepted_at,
                              deliver_at, expires_at, recipient_devices, fetched_by, acked_by, cancelled)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 0, 0, 0)
        """
    static let insertQueue = """
        INSERT INTO message_queue (device_id, message_id, incoming, deliver_at, expires_at, fetched) VALUES (?1, ?2, ?3, ?4, ?5, 0)
        """

    static func store(_ c: DirectSQLite, _ batch: [StoreRequest]) throws -> [StoreOutcome] {
        guard !batch.isEmpty else { return [] }
        return try c.writeTransaction {
            var existing: [String: MessageRecord] = [:]
            let byID = try c.statement(messageByID)
            for id in Set(batch.map(\.message.id)) {
                byID.bind(1, id)
                try byID.forEach { row in existing[id] = message(row) }
            }
            var accounts: [SendBatchPlan.AccountDevice] = []
            let read = try c.statement(accountDevices)
            for name in SendBatchPlan.usernames(batch) {
                read.bind(1, name)
                try read.forEach { row in
                    accounts.append(
                        .init(
                            accountID: row.string(0),
                            username: row.string(1),
                            device: row.isNull(2) ? nil : (row.string(2), row.string(3), row.string(4))
                        )
                    )
                }
            }
            let plan = SendBatchPlan(batch: batch, existing: existing, accounts: accounts)
            let insert = try c.statement(insertMessage)
            for m in plan.messages {
                insert.bind(1, m.id)
                insert.bind(2, m.senderAccountID)
                insert.bind(3, m.senderDeviceID)
                insert.bind(4, m.senderUsername)
                insert.bind(5, m.recipients.joined(separator: ","))
                insert.bind(6, m.envelope)
                insert.bind(7, m.digest)
                insert.bind(8, Int64(m.envelope.count))
                insert.bind(9, m.acceptedAt.ms)
                insert.bind(10, m.deliverAt.ms)
                insert.bind(11, m.expiresAt.ms)
                insert.bind(12, Int64(m.recipientDevices))
                try insert.run()
            }
            let queue = try c.statement(insertQueue)
            for q in plan.queue {
                queue.bind(1, q.deviceID)
                queue.bind(2, q.messageID)
                queue.bind(3, q.incoming ? 1 : 0)
                queue.bind(4, q.deliverAt.ms)
                queue.bind(5, q.expiresAt.ms)
                try queue.run()
            }
            return plan.outcomes
        }
    }

    static func message(_ row: DirectStatement) -> MessageRecord {
        let recipients = row.string(4)
        return MessageRecord(
            id: row.string(0),
            senderAccountID: row.string(1),
            senderDeviceID: row.string(2),
            senderUsername: row.string(3),
            recipients: recipients.isEmpty ? [] : recipients.split(separator: ",").map(String.init),
            envelope: row.bytes(5),
            digest: row.string(6),
            acceptedAt: Date(ms: row.int64(7)),
            deliverAt: Date(ms: row.int64(8)),
            expiresAt: Date(ms: row.int64(9)),
            recipientDevices: Int(row.int64(10)),
            fetchedBy: Int(row.int64(11)),
            acknowledgedBy: Int(row.int64(12)),
            cancelled: row.int64(13) != 0
        )
    }
}
