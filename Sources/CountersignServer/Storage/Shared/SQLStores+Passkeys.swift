import FluentKit
import Foundation
import SQLKit

/// `PasskeyStore` over SQLKit, for SQLite and PostgreSQL.
extension SQLStores {
    /// One statement: the update that changes nothing makes RETURNING give the row already there.
    package func userHandle(accountID: String, candidate: [UInt8]) async throws -> [UInt8] {
        let row = try await sql.raw(
            """
            INSERT INTO webauthn_users (account_id, user_handle) VALUES (\(bind: accountID), \(bind: Data(candidate)))
            ON CONFLICT (account_id) DO UPDATE SET account_id = excluded.account_id RETURNING user_handle
            """
        ).first()
        guard let row else { throw PasskeyStoreError.noUserHandle(accountID: accountID) }
        return Array(try row.decode(column: "user_handle", as: Data.self))
    }

    package func account(userHandle: [UInt8]) async throws -> String? {
        try await sql.raw("SELECT account_id FROM webauthn_users WHERE user_handle = \(bind: Data(userHandle))")
            .first()?
            .decode(column: "account_id", as: String.self)
    }

    /// Counted and inserted in one write transaction: SQLite has one writer; on PostgreSQL a transaction
    /// lock serialises ceremony creation (not taking), so concurrent starts cannot pass the cap together.
    package func createCeremony(id: String, state: Data, expiresAt: Date) async throws {
        try await sql.raw(
            """
            INSERT INTO passkey_ceremonies (id, state, expires_at)
            VALUES (\(bind: id), \(bind: String(decoding: state, as: UTF8.self)), \(bind: expiresAt.ms))
            """
        ).run()
    }

    /// The state of a carried ceremony's record: no other path takes, reads or deletes such a row (only the
    /// purge, once it has expired), so no request can unspend one (security review, issue 33).
    static var spentCeremony: String { "spent" }

    /// One statement: the primary key settles concurrent answers. Purged with the other ceremonies once
    /// expired, when the MAC no longer admits the ID anyway.
    package func spendCeremony(id: String, expiresAt: Date, now: Date) async throws -> Bool {
        try await !sql.raw(
            """
            INSERT INTO passkey_ceremonies (id, state, expires_at)
            VALUES (\(bind: id), \(bind: Self.spentCeremony), \(bind: expiresAt.ms))
            ON CONFLICT (id) DO NOTHING RETURNING id
            """
        ).all().isEmpty
    }

    package func takeCeremony(id: String, now: Date) async throws -> Data? {
        guard
            let row = try await sql.raw(
                """
                DELETE FROM passkey_ceremonies WHERE id = \(bind: id) AND state <> \(bind: Self.spentCeremony)
                RETURNING state, expires_at
                """
            )
            .first(),
            try row.decode(column: "expires_at", as: Int64.self) > now.ms
        else { return nil }
        return Data(try row.decode(column: "state", as: String.self).utf8)
    }

    package func ceremony(id: String, now: Date) async throws -> Data? {
        guard
            let row = try await sql.raw(
                """
                SELECT state FROM passkey_ceremonies
                WHERE id = \(bind: id) AND expires_at > \(bind: now.ms) AND state <> \(bind: Self.spentCeremony)
                """
            )
            .first()
        else { return nil }
        return Data(try row.decode(column: "state", as: String.self).utf8)
    }

    static func passkey(_ row: any SQLRow) throws -> StoredPasskey {
        let transports = try row.decode(column: "transports", as: String.self)
        return StoredPasskey(
            id: try row.decode(column: "id", as: String.self),
            accountID: try row.decode(column: "account_id", as: String.self),
            credentialID: Array(try row.decode(column: "credential_id", as: Data.self)),
            publicKey: Array(try row.decode(column: "public_key", as: Data.self)),
            signCount: UInt32(clamping: try row.decode(column: "sign_count", as: Int64.self)),
            backupEligible: try row.decode(column: "backup_eligible", as: Int64.self) != 0,
            backedUp: try row.decode(column: "backed_up", as: Int64.self) != 0,
            aaguid: Array(try row.decode(column: "aaguid", as: Data.self)),
            transports: transports.isEmpty ? [] : transports.split(separator: ",").map(String.init),
            name: try row.decode(column: "name", as: String.self),
            createdAt: Date(ms: try row.decode(column: "created_at", as: Int64.self)),
            lastUsedAt: try row.decode(column: "last_used_at", as: Int64?.self).map(Date.init(ms:)),
            prfSalt: Array(try row.decode(column: "prf_salt", as: Data?.self) ?? Data())
        )
    }

    package func passkeys(accountID: String) async throws -> [StoredPasskey] {
        try await sql.raw("SELECT * FROM passkeys WHERE account_id = \(bind: accountID) ORDER BY created_at, id").all()
            .map(Self.passkey)
    }

    package func setPRFSaltIfMissing(id: String, salt: [UInt8]) async throws -> [UInt8] {
        try await sql.raw(
            "UPDATE passkeys SET prf_salt = \(bind: Data(salt)) WHERE id = \(bind: id) AND (prf_salt IS NULL OR length(prf_salt) = 0)"
        ).run()
        let row = try await sql.raw("SELECT prf_salt FROM passkeys WHERE id = \(bind: id)").first()
        return Array(try row?.decode(column: "prf_salt", as: Data?.self) ?? Data())
    }

    package func passkey(credentialID: [UInt8]) async throws -> StoredPasskey? {
        try await sql.raw("SELECT * FROM passkeys WHERE credential_id = \(bind: Data(credentialID))").first()
            .map(Self.passkey)
    }

    /// Counted and inserted in one write transaction holding the account's row lock on PostgreSQL (SQLite
    /// has one writer); the unique index on the credential ID settles a race between accounts. Transports
    /// are stored comma-joined: the rules admit only lowercase names.
    package func addPasskey(
        _ p: StoredPasskey,
        max: Int,
        spending ceremony: (id: String, now: Date)?,
        audit: AuditEntry?
    ) async throws
        -> PasskeyAddResult
    {
        precondition(
            p.transports.allSatisfy { !$0.isEmpty && !$0.contains(",") },
            "transports are checked by PasskeyRules"
        )
        let dialect = self.dialect
        return try await writeTransaction { sql in
            // The account first, as every transaction that touches an account's rows locks it.
            guard try await sql.lockAccount(p.accountID, dialect) else { return .accountNotFound }
            if let ceremony {
                // Committed with whatever follows: refused or added, the ceremony is spent.
                let spent = try await sql.raw(
                    """
                    DELETE FROM passkey_ceremonies WHERE id = \(bind: ceremony.id) AND expires_at > \(bind: ceremony.now.ms)
                      AND state <> \(bind: Self.spentCeremony)
                    RETURNING id
                    """
                ).all()
                guard !spent.isEmpty else { return .ceremonyGone }
            }
            let count =
                try await sql.raw("SELECT COUNT(*) AS n FROM passkeys WHERE account_id = \(bind: p.accountID)").first()?
                .decode(column: "n", as: Int64.self) ?? 0
            guard count < max else { return .tooMany }
            let inserted = try await sql.raw(
                """
                INSERT INTO passkeys (id, account_id, credential_id, public_key, sign_count, backup_eligible, backed_up, aaguid,
                                      transports, name, created_at, last_used_at, prf_salt)
                VALUES (\(bind: p.id), \(bind: p.accountID), \(bind: Data(p.credentialID)), \(bind: Data(p.publicKey)),
                        \(bind: Int64(p.signCount)), \(bind: Int64(p.backupEligible ? 1 : 0)), \(bind: Int64(p.backedUp ? 1 : 0)),
                        \(bind: Data(p.aaguid)), \(bind: p.transports.joined(separator: ",")), \(bind: p.name), \(bind: p.createdAt.ms), NULL,
                        \(bind: Data(p.prfSalt)))
                ON CONFLICT (credential_id) DO NOTHING RETURNING id
                """
            ).all()
            guard !inserted.isEmpty else { return .credentialTaken }
            if let audit { try await Self.insertAudit(sql, audit) }
            return .added
        }
    }

    package func recordPasskeyUse(
        id: String,
        expectedCount: UInt32,
        newCount: UInt32,
        backedUp: Bool,
        at: Date
    )
        async throws -> Bool
    {
        try await !sql.raw(
            """
            UPDATE passkeys SET sign_count = \(bind: Int64(newCount)), backed_up = \(bind: Int64(backedUp ? 1 : 0)),
                                last_used_at = \(bind: at.ms)
            WHERE id = \(bind: id) AND sign_count = \(bind: Int64(expectedCount)) RETURNING id
            """
        ).all().isEmpty
    }

    package func renamePasskey(id: String, accountID: String, name: String) async throws -> Bool {
        try await !sql.raw(
            "UPDATE passkeys SET name = \(bind: name) WHERE id = \(bind: id) AND account_id = \(bind: accountID) RETURNING id"
        ).all().isEmpty
    }

    package func removePasskey(id: String, accountID: String, keepingSession: String) async throws -> Bool {
        let dialect = self.dialect
        return try await writeTransaction { sql in
            guard
                try await !sql.raw(
                    "DELETE FROM passkeys WHERE id = \(bind: id) AND account_id = \(bind: accountID) RETURNING id"
                ).all().isEmpty
            else { return false }
            _ = try await sql.lockAccount(accountID, dialect)  // serialised with binds
            try await sql.raw(
                "DELETE FROM session_bindings WHERE account_id = \(bind: accountID) AND passkey_id = \(bind: id)"
            ).run()
            try await sql.raw(
                """
                DELETE FROM sessions WHERE account_id = \(bind: accountID) AND passkey_id = \(bind: id)
                AND token_hash <> \(bind: keepingSession)
                """
            ).run()
            // Again after the sessions: a bind racing this removal has committed by now (PostgreSQL).
            try await sql.raw(
                "DELETE FROM session_bindings WHERE account_id = \(bind: accountID) AND passkey_id = \(bind: id)"
            ).run()
            return true
        }
    }

    package func purgeExpiredCeremonies(now: Date) async throws {
        try await sql.raw("DELETE FROM passkey_ceremonies WHERE expires_at <= \(bind: now.ms)").run()
    }
}

extension SQLDatabase {
    /// Takes the account's row lock inside a write transaction (PostgreSQL; SQLite's writer is already
    /// alone), and says whether the account exists: with no row there is nothing to lock a cap with.
    func lockAccount(_ accountID: String, _ dialect: StorageDialect) async throws -> Bool {
        try await raw("SELECT id FROM accounts WHERE id = \(bind: accountID)\(dialect.forUpdate)").first() != nil
    }
}
