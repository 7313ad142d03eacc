import FluentKit
import Foundation
import SQLKit

/// `PushStore` over SQLKit, for SQLite and PostgreSQL.
extension SQLStores {

    package func createTicket(hash: String, deviceID: String, sessionHash: String, expiresAt: Date) async throws {
        try await sql.raw(
            """
            INSERT INTO push_tickets (ticket_hash, device_id, session_hash, expires_at)
            VALUES (\(bind: hash), \(bind: deviceID), \(bind: sessionHash), \(bind: expiresAt.ms))
            """
        ).run()
    }

    package func spendTicket(hash: String, now: Date) async throws -> String? {
        // Deleted whether or not it is still valid: a ticket is tried once.
        guard
            let row = try await sql.raw(
                "DELETE FROM push_tickets WHERE ticket_hash = \(bind: hash) RETURNING session_hash, expires_at"
            ).first()
        else { return nil }
        guard try row.decode(column: "expires_at", as: Int64.self) > now.ms else { return nil }
        return try row.decode(column: "session_hash", as: String.self)
    }

    package func claimDue(now: Date, limit: Int) async throws -> (messages: [String], accounts: [String]) {
        let dialect = self.dialect
        return try await database.transaction { tx in
            let sql = tx as! any SQLDatabase
            // The conditions repeat the partial index's (messages_due) so both databases use it.
            let claimed = try await sql.raw(
                """
                UPDATE messages SET announced = 1 WHERE id IN (
                  SELECT id FROM messages WHERE announced = 0 AND deliver_at > accepted_at AND deliver_at <= \(bind: now.ms)
                  ORDER BY deliver_at LIMIT \(bind: Int64(limit))\(dialect.forUpdateSkipLocked))
                RETURNING id
                """
            ).all().map { try $0.decode(column: "id", as: String.self) }
            guard !claimed.isEmpty else { return ([], []) }
            let accounts = try await sql.raw(
                """
                SELECT DISTINCT d.account_id FROM message_queue q JOIN devices d ON d.id = q.device_id WHERE q.message_id IN (\(binds: claimed))
                """
            ).all().map { try $0.decode(column: "account_id", as: String.self) }
            return (claimed, accounts)
        }
    }

    package func purgeExpiredTickets(now: Date) async throws {
        try await sql.raw("DELETE FROM push_tickets WHERE expires_at <= \(bind: now.ms)").run()
    }
}
