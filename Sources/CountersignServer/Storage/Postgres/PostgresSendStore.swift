import Foundation
import Logging
import NIOCore
import PostgresNIO

/// A batch of sends on PostgreSQL: one connection (the server's send lane), one transaction, three named prepared
/// statements whose SQL never changes with the batch size (arrays bound as single parameters, rows
/// inserted with `unnest`), so the server parses none of them again and, on the lane, plans each once
/// (`PostgresLanes.plannerSettings`). Five round trips: BEGIN, the account locks, the reads, the inserts,
/// COMMIT. The checks are `SendBatchPlan`, the same code as the SQLite writer's.
enum PostgresSendStore {
    static func store(
        _ connection: PostgresConnection,
        _ batch: [StoreRequest],
        logger: Logger
    ) async throws -> [StoreOutcome] {
        try await transaction(connection, logger: logger) {
            try await storeInTransaction(connection, batch, logger: logger)
        }
    }

    private static func transaction<T>(
        _ c: PostgresConnection,
        logger: Logger,
        _ body: () async throws -> T
    ) async throws -> T {
        try await c.query("BEGIN", logger: logger)
        do {
            let result = try await body()
            try await c.query("COMMIT", logger: logger)
            return result
        } catch {
            do {
                try await c.query("ROLLBACK", logger: logger)
            } catch {
                // Still inside the failed transaction, or not knowing: the next batch must not begin in it.
                try? await c.close()
            }
            throw error
        }
    }

    private static func storeInTransaction(
        _ c: PostgresConnection,
        _ batch: [StoreRequest],
        logger: Logger
    ) async throws -> [StoreOutcome] {
        let usernames = SendBatchPlan.usernames(batch)
        // Every account of the batch, in one fixed order, so concurrent batches cannot deadlock;
        // registrations, rotations and revocations (FOR UPDATE) wait until this commits. The device read
        // below is a later statement, so it sees what they committed before.
        for try await _ in try await c.execute(LockAccounts(usernames: usernames), logger: logger) {}
        // Both reads in one statement (one round trip fewer per batch): the batch is written one at a time,
        // so its latency, mostly round trips, bounds the send rate.
        var existing: [String: MessageRecord] = [:]
        var accounts: [SendBatchPlan.AccountDevice] = []
        let reads = BatchReads(usernames: usernames, ids: Array(Set(batch.map(\.message.id))))
        for try await row in try await c.execute(reads, logger: logger) {
            switch row {
            case .account(let a): accounts.append(a)
            case .message(let m): existing[m.id] = m
            }
        }
        let plan = SendBatchPlan(batch: batch, existing: existing, accounts: accounts)
        if !plan.messages.isEmpty {
            try await c.execute(InsertMessages(messages: plan.messages, queue: plan.queue), logger: logger)
        }
        return plan.outcomes
    }

    struct LockAccounts: PostgresPreparedStatement {
        static let sql = "SELECT id FROM accounts WHERE username = ANY($1) ORDER BY id FOR SHARE"
        typealias Row = String
        var usernames: [String]
        func makeBindings() throws -> PostgresBindings {
            var b = PostgresBindings(capacity: 1)
            b.append(usernames)
            return b
        }
        func decodeRow(_ row: PostgresRow) throws -> String { try row.decode(String.self) }
    }

    /// Every named account with each of its active devices (one row with NULLs for an account with none),
    /// then the stored messages with IDs of the batch: one result, told apart by its first column.
    struct BatchReads: PostgresPreparedStatement {
        static let sql = """
            SELECT 0, a.id, a.username, d.id, d.encryption_key_id, d.signing_key_id,
                   NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::bytea, NULL::text,
                   NULL::int8, NULL::int8, NULL::int8, NULL::int8, NULL::int8, NULL::int8, NULL::int8
            FROM accounts a LEFT JOIN devices d ON d.account_id = a.id AND d.revoked_at IS NULL AND d.kind = 'messaging' WHERE a.username = ANY($1)
            UNION ALL
            SELECT 1, NULL, NULL, NULL, NULL, NULL,
                   id, sender_account, sender_device, sender_username, recipients, envelope, digest,
                   accepted_at, deliver_at, expires_at, recipient_devices, fetched_by, acked_by, cancelled
            FROM messages WHERE id = ANY($2)
            """
        enum Row {
            case account(SendBatchPlan.AccountDevice)
            case message(MessageRecord)
        }
        var usernames: [String]
        var ids: [String]
        func makeBindings() throws -> PostgresBindings {
            var b = PostgresBindings(capacity: 2)
            b.append(usernames)
            b.append(ids)
            return b
        }
        func decodeRow(_ row: PostgresRow) throws -> Row {
            let r = row.makeRandomAccess()
            func text(_ i: Int) throws -> String { try r[i].decode(String.self) }
            func int(_ i: Int) throws -> Int64 { try r[i].decode(Int64.self) }
            guard try r[0].decode(Int32.self) == 1 else {
                let device = try r[3].decode(String?.self).map { id in
                    (id: id, encryptionKeyID: try text(4), signingKeyID: try text(5))
                }
                return .account(.init(accountID: try text(1), username: try text(2), device: device))
            }
            let recipients = try text(10)
            return .message(
                MessageRecord(
                    id: try text(6),
                    senderAccountID: try text(7),
                    senderDeviceID: try text(8),
                    senderUsername: try text(9),
                    recipients: recipients.isEmpty ? [] : recipients.split(separator: ",").map(String.init),
                    envelope: Array(try r[11].decode(ByteBuffer.self).readableBytesView),
                    digest: try text(12),
                    acceptedAt: Date(ms: try int(13)),
                    deliverAt: Date(ms: try int(14)),
                    expiresAt: Date(ms: try int(15)),
                    recipientDevices: Int(try int(16)),
                    fetchedBy: Int(try int(17)),
                    acknowledgedBy: Int(try int(18)),
                    cancelled: try int(19) != 0
                )
            )
        }
    }

    /// The messages and their queue entries in one statement (one round trip): the queue rows in batch
    /// order (ORDER BY the array position), since `seq` is drawn row by row and each device's queue
    /// keeps the order in which sends were accepted.
    struct InsertMessages: PostgresPreparedStatement {
        static let sql = """
            WITH inserted AS (
                INSERT INTO messages (id, sender_account, sender_device, sender_username, recipients, envelope, digest, size, accepted_at,
                                      deliver_at, expires_at, recipient_devices, fetched_by, acked_by, cancelled)
                SELECT id, sa, sd, su, r, e, dg, sz, aa, da, ea, rd, 0, 0, 0
                FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bytea[], $7::text[], $8::int8[], $9::int8[],
                            $10::int8[], $11::int8[], $12::int8[]) WITH ORDINALITY AS t(id, sa, sd, su, r, e, dg, sz, aa, da, ea, rd, n)
                ORDER BY n
            )
            INSERT INTO message_queue (device_id, message_id, incoming, deliver_at, expires_at, fetched)
            SELECT d, m, i, da, ea, 0 FROM unnest($13::text[], $14::text[], $15::int8[], $16::int8[], $17::int8[]) WITH ORDINALITY AS q(d, m, i, da, ea, n)
            ORDER BY n
            """
        typealias Row = ()
        var messages: [MessageRecord]
        var queue: [SendBatchPlan.QueueRow]
        func makeBindings() throws -> PostgresBindings {
            var b = PostgresBindings(capacity: 17)
            b.append(messages.map(\.id))
            b.append(messages.map(\.senderAccountID))
            b.append(messages.map(\.senderDeviceID))
            b.append(messages.map(\.senderUsername))
            b.append(messages.map { $0.recipients.joined(separator: ",") })
            b.append(messages.map { ByteBuffer(bytes: $0.envelope) })
            b.append(messages.map(\.digest))
            b.append(messages.map { Int64($0.envelope.count) })
            b.append(messages.map(\.acceptedAt.ms))
            b.append(messages.map(\.deliverAt.ms))
            b.append(messages.map(\.expiresAt.ms))
            b.append(messages.map { Int64($0.recipientDevices) })
            b.append(queue.map(\.deviceID))
            b.append(queue.map(\.messageID))
            b.append(queue.map { Int64($0.incoming ? 1 : 0) })
            b.append(queue.map(\.deliverAt.ms))
            b.append(queue.map(\.expiresAt.ms))
            return b
        }
        func decodeRow(_ row: PostgresRow) throws {}
    }
}
