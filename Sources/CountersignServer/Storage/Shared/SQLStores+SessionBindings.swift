import Foundation
import SQLKit

/// Session bindings (`SessionBindingStore`), the same SQL on both backends. On PostgreSQL a bind and every
/// ending of the account's sessions lock the account's row first, so they take turns; a resumption holds its
/// binding's row lock until it commits, and the endings delete bindings before and after sessions, so a
/// resumption racing an ending either finds no binding or has its session deleted by the ending.
extension SQLStores {
    package func bind(_ given: SessionBindingRecord, sessionTokenHash: String, keep: Int) async throws -> String? {
        let dialect = self.dialect
        return try await writeTransaction { sql in
            // Serialised with the endings of the account's sessions, which lock its row first too (PostgreSQL;
            // SQLite's writers are one at a time): then a session ended meanwhile binds nothing.
            guard try await sql.lockAccount(given.accountID, dialect) else { return nil }
            var b = given
            // One binding per device, under one ID: a browser that signs in again (or reloads before the
            // answer came) keeps the ID it has stored.
            if let device = b.deviceID,
                let row = try await sql.raw(
                    """
                    SELECT id, authenticated_at FROM session_bindings
                    WHERE device_id = \(bind: device) AND account_id = \(bind: b.accountID)
                    """
                ).first()
            {
                b.id = try row.decode(column: "id", as: String.self)
                let earlier = Date(ms: try row.decode(column: "authenticated_at", as: Int64.self))
                b.authenticatedAt = max(b.authenticatedAt, earlier)
            }
            guard
                try await sql.raw(
                    """
                    UPDATE sessions SET binding_id = \(bind: b.id)
                    WHERE token_hash = \(bind: sessionTokenHash) AND account_id = \(bind: b.accountID) RETURNING token_hash
                    """
                ).first() != nil
            else { return nil }
            if b.id != given.id {
                // The session's own earlier binding (a key of the browser's own) gives way to its device's.
                try await sql.raw("DELETE FROM session_bindings WHERE id = \(bind: given.id)").run()
            }
            try await sql.raw("DELETE FROM session_bindings WHERE id = \(bind: b.id)").run()
            try await sql.raw(
                """
                INSERT INTO session_bindings (id, account_id, public_key, device_id, created_at, last_used_at, authenticated_at, passkey_id, amr)
                VALUES (\(bind: b.id), \(bind: b.accountID), \(bind: Data(b.publicKey)), \(bind: b.deviceID),
                        \(bind: b.createdAt.ms), \(bind: b.lastUsedAt.ms), \(bind: b.authenticatedAt.ms), \(bind: b.passkeyID),
                        \(bind: SessionMethods.text(b.methods)))
                """
            ).run()
            if b.id != given.id {
                try await sql.raw(
                    "UPDATE sessions SET binding_id = \(bind: b.id) WHERE binding_id = \(bind: given.id)"
                ).run()
            }
            try await sql.raw(
                """
                DELETE FROM session_bindings WHERE account_id = \(bind: b.accountID) AND id NOT IN
                    (SELECT id FROM session_bindings WHERE account_id = \(bind: b.accountID)
                     ORDER BY last_used_at DESC, created_at DESC LIMIT \(bind: keep))
                """
            ).run()
            return b.id
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
                passkeyID: try row.decode(column: "passkey_id", as: String?.self),
                methods: SessionMethods.parse(try row.decode(column: "amr", as: String?.self))
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

    package func endSession(tokenHash: String) async throws {
        try await writeTransaction { sql in
            // The binding as the session has it now (a bind racing this sign-out has committed or is refused).
            let row = try await sql.raw(
                "DELETE FROM sessions WHERE token_hash = \(bind: tokenHash) RETURNING binding_id"
            ).first()
            guard let binding = try row?.decode(column: "binding_id", as: String?.self) else { return }
            try await sql.raw("DELETE FROM session_bindings WHERE id = \(bind: binding)").run()
            try await sql.raw("DELETE FROM sessions WHERE binding_id = \(bind: binding)").run()
        }
    }

    package func deleteBinding(id: String) async throws {
        try await writeTransaction { sql in
            try await sql.raw("DELETE FROM session_bindings WHERE id = \(bind: id)").run()
            try await sql.raw("DELETE FROM sessions WHERE binding_id = \(bind: id)").run()
        }
    }

    package func purgeIdleBindings(now: Date, idle: TimeInterval, idleWithoutDevice: TimeInterval) async throws {
        guard idle > 0 else { return try await sql.raw("DELETE FROM session_bindings").run() }
        try await sql.raw(
            """
            DELETE FROM session_bindings WHERE
                (device_id IS NOT NULL AND last_used_at <= \(bind: now.addingTimeInterval(-idle).ms)) OR
                (device_id IS NULL AND last_used_at <= \(bind: now.addingTimeInterval(-idleWithoutDevice).ms))
            """
        ).run()
    }

    // The resumption nonces: spent as either kind (fresh or next), the next one replacing its binding's last.
    package func spendChallenge(hash: String, kinds: Set<String>, subject: String, now: Date) async throws -> Bool {
        let rows = try await sql.raw(
            """
            DELETE FROM device_challenges WHERE challenge_hash = \(bind: hash) RETURNING kind, subject, expires_at
            """
        ).all()
        guard let row = rows.first else { return false }
        return try kinds.contains(row.decode(column: "kind", as: String.self))
            && row.decode(column: "subject", as: String.self) == subject
            && row.decode(column: "expires_at", as: Int64.self) > now.ms
    }

    package func replaceChallenge(hash: String, kind: String, subject: String, expiresAt: Date) async throws {
        try await writeTransaction { sql in
            try await sql.raw(
                "DELETE FROM device_challenges WHERE kind = \(bind: kind) AND subject = \(bind: subject)"
            ).run()
            try await sql.raw(
                """
                INSERT INTO device_challenges (challenge_hash, kind, subject, expires_at)
                VALUES (\(bind: hash), \(bind: kind), \(bind: subject), \(bind: expiresAt.ms))
                """
            ).run()
        }
    }
}
