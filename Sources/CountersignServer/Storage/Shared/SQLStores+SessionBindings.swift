import Foundation
import SQLKit

/// Session bindings (`SessionBindingStore`), the same SQL on both backends. On PostgreSQL a resumption
/// holds its binding's row lock until it commits, and every ending deletes bindings before sessions, so
/// a resumption racing a lock either finds no binding or has its session deleted by the lock.
extension SQLStores {
    package func bind(_ b: SessionBindingRecord, sessionTokenHash: String) async throws {
        try await writeTransaction { sql in
            try await sql.raw("DELETE FROM session_bindings WHERE id = \(bind: b.id)").run()
            try await sql.raw(
                """
                INSERT INTO session_bindings (id, account_id, public_key, device_id, created_at, last_used_at, authenticated_at, passkey_id)
                VALUES (\(bind: b.id), \(bind: b.accountID), \(bind: Data(b.publicKey)), \(bind: b.deviceID),
                        \(bind: b.createdAt.ms), \(bind: b.lastUsedAt.ms), \(bind: b.authenticatedAt.ms), \(bind: b.passkeyID))
                """
            ).run()
            try await sql.raw(
                "UPDATE sessions SET binding_id = \(bind: b.id) WHERE token_hash = \(bind: sessionTokenHash)"
            ).run()
        }
    }

    package func binding(id: String) async throws -> SessionBindingRecord? {
        try await sql.raw("SELECT * FROM session_bindings WHERE id = \(bind: id)").first().map { row in
            SessionBindingRecord(
                id: try row.decode(column: "id", as: String.self),
                accountID: try row.decode(column: "account_id", as: String.self),
                publicKey: Array(try row.decode(column: "public_key", as: Data.self)),
                deviceID: try row.decode(column: "device_id", as: String?.self),
                createdAt: Date(ms: try row.decode(column: "created_at", as: Int64.self)),
                lastUsedAt: Date(ms: try row.decode(column: "last_used_at", as: Int64.self)),
                authenticatedAt: Date(ms: try row.decode(column: "authenticated_at", as: Int64.self)),
                passkeyID: try row.decode(column: "passkey_id", as: String?.self)
            )
        }
    }

    package func resume(_ s: SessionRecord, keep: Int) async throws -> Bool {
        guard let bindingID = s.bindingID else { return false }
        let dialect = self.dialect
        return try await writeTransaction { sql in
            guard
                try await sql.raw(
                    "SELECT id FROM session_bindings WHERE id = \(bind: bindingID)\(dialect.forUpdate)"
                ).first() != nil
            else { return false }
            try await Self.insertSession(sql, s)
            try await sql.raw(
                "UPDATE session_bindings SET last_used_at = \(bind: s.createdAt.ms) WHERE id = \(bind: bindingID)"
            ).run()
            // Each tab resumes a session of its own; the least recently used beyond `keep` end.
            try await sql.raw(
                """
                DELETE FROM sessions WHERE binding_id = \(bind: bindingID) AND token_hash NOT IN
                    (SELECT token_hash FROM sessions WHERE binding_id = \(bind: bindingID)
                     ORDER BY last_used_at DESC, created_at DESC LIMIT \(bind: keep))
                """
            ).run()
            return true
        }
    }

    package func deleteBinding(id: String) async throws {
        try await writeTransaction { sql in
            try await sql.raw("DELETE FROM session_bindings WHERE id = \(bind: id)").run()
            try await sql.raw("DELETE FROM sessions WHERE binding_id = \(bind: id)").run()
        }
    }

    package func purgeIdleBindings(now: Date, idle: TimeInterval, idleWithoutDevice: TimeInterval) async throws {
        try await sql.raw(
            """
            DELETE FROM session_bindings WHERE
                (device_id IS NOT NULL AND last_used_at <= \(bind: now.addingTimeInterval(-idle).ms)) OR
                (device_id IS NULL AND last_used_at <= \(bind: now.addingTimeInterval(-idleWithoutDevice).ms))
            """
        ).run()
    }
}
