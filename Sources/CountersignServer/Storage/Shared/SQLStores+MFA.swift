import FluentKit
import Foundation
import SQLKit

/// The MFA statements both backends run: every method of `MFAStore` but the second-factor reads each
/// sign-in makes, which are each backend's own (`SQLiteStorage+MFA.swift`, `PostgresStorage+MFA.swift`).
extension SQLStores {

    private func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

    // MARK: MFAStateStore (the reads are each backend's: accountState)

    package func saveAccountState(_ accountID: String, state: Data, expected: Int64?) async throws -> Bool {
        if let expected {
            return try await !sql.raw(
                """
                UPDATE mfa_accounts SET state = \(bind: text(state)), version = version + 1
                WHERE account_id = \(bind: accountID) AND version = \(bind: expected) RETURNING version
                """
            ).all().isEmpty
        }
        return try await !sql.raw(
            """
            INSERT INTO mfa_accounts (account_id, state, version) VALUES (\(bind: accountID), \(bind: text(state)), 1)
            ON CONFLICT (account_id) DO NOTHING RETURNING version
            """
        ).all().isEmpty
    }

    // MARK: AuthenticatorStore (the reads are each backend's: authenticators(accountID:))

    static func authenticator(_ row: any SQLRow) throws -> AuthenticatorRecord {
        AuthenticatorRecord(
            deviceID: try row.decode(column: "device_id", as: String.self),
            accountID: try row.decode(column: "account_id", as: String.self),
            pushAllowed: try row.decode(column: "push_allowed", as: Int64.self) != 0,
            sealedTOTPSecret: Array(try row.decode(column: "totp_secret", as: Data.self)),
            lastStep: try row.decode(column: "totp_last_step", as: Int64?.self).map { UInt64($0) },
            pairedAt: Date(ms: try row.decode(column: "paired_at", as: Int64.self))
        )
    }

    package func authenticator(deviceID: String) async throws -> AuthenticatorRecord? {
        try await sql.raw(
            """
            SELECT a.* FROM authenticators a JOIN devices d ON d.id = a.device_id WHERE a.device_id = \(bind: deviceID) AND d.revoked_at IS NULL
            """
        ).first().map(Self.authenticator)
    }

    static func insertAuthenticator(_ sql: any SQLDatabase, _ a: AuthenticatorRecord) async throws {
        try await sql.raw(
            """
            INSERT INTO authenticators (device_id, account_id, push_allowed, totp_secret, totp_last_step, paired_at)
            VALUES (\(bind: a.deviceID), \(bind: a.accountID), \(bind: Int64(a.pushAllowed ? 1 : 0)), \(bind: Data(a.sealedTOTPSecret)), NULL,
                    \(bind: a.pairedAt.ms))
            """
        ).run()
    }

    package func setPushAllowed(deviceID: String, _ allowed: Bool) async throws {
        try await sql.raw(
            "UPDATE authenticators SET push_allowed = \(bind: Int64(allowed ? 1 : 0)) WHERE device_id = \(bind: deviceID)"
        ).run()
    }

    package func advanceStep(deviceID: String, to step: UInt64) async throws -> Bool {
        try await !sql.raw(
            """
            UPDATE authenticators SET totp_last_step = \(bind: Int64(step))
            WHERE device_id = \(bind: deviceID) AND (totp_last_step IS NULL OR totp_last_step < \(bind: Int64(step))) RETURNING device_id
            """
        ).all().isEmpty
    }

    package func removeAuthenticators(accountID: String) async throws -> [String] {
        try await sql.raw("DELETE FROM authenticators WHERE account_id = \(bind: accountID) RETURNING device_id").all()
            .map { try $0.decode(column: "device_id", as: String.self) }
    }

    package func addLog(supportID: String, deviceID: String, accountID: String, at: Date, text: String) async throws {
        try await sql.raw(
            """
            INSERT INTO authenticator_logs (support_id, device_id, account_id, created_at, text)
            VALUES (\(bind: supportID), \(bind: deviceID), \(bind: accountID), \(bind: at.ms), \(bind: text))
            """
        ).run()
    }

    // MARK: PairingStore

    package func createPairingKey(
        hash: String,
        accountID: String,
        expiresAt: Date,
        maxOpen: Int,
        now: Date
    ) async throws -> Bool {
        try await insertUnderCap(accountID: accountID, table: "pairing_keys", maxOpen: maxOpen, now: now) { sql in
            try await sql.raw(
                """
                INSERT INTO pairing_keys (key_hash, account_id, expires_at) VALUES (\(bind: hash), \(bind: accountID), \(bind: expiresAt.ms))
                """
            ).run()
        }
    }

    package func openPairingGrant(
        hash: String,
        accountID: String,
        boundKey: String,
        payloadHash: String,
        expiresAt: Date,
        payloadExpiresAt: Date,
        maxOpen: Int,
        now: Date
    ) async throws -> PairingGrantWrite {
        let dialect = self.dialect
        return try await writeTransaction { sql in
            guard try await sql.lockAccount(accountID, dialect) else { return .tooMany }
            let open =
                try await sql.raw(
                    """
                    SELECT COUNT(*) AS n FROM pairing_keys WHERE account_id = \(bind: accountID) AND expires_at > \(bind: now.ms)
                    """
                ).first()?.decode(column: "n", as: Int64.self) ?? 0
            guard open < maxOpen else { return .tooMany }
            // A payload used before (and not yet expired) inserts nothing: refused before the key is.
            let fresh = try await sql.raw(
                """
                INSERT INTO pairing_payloads (payload_hash, expires_at) VALUES (\(bind: payloadHash), \(bind: payloadExpiresAt.ms))
                ON CONFLICT (payload_hash) DO NOTHING RETURNING payload_hash
                """
            ).first()
            guard fresh != nil else { return .payloadUsed }
            try await sql.raw(
                """
                INSERT INTO pairing_keys (key_hash, account_id, expires_at, bound_key)
                VALUES (\(bind: hash), \(bind: accountID), \(bind: expiresAt.ms), \(bind: boundKey))
                """
            ).run()
            return .opened
        }
    }

    /// Counts the account's unexpired rows of `table` and inserts only below `maxOpen`, in one write
    /// transaction that holds the account's row lock on PostgreSQL (SQLite has one writer), so that
    /// concurrent requests cannot each see room for one more. No account row, nothing to lock: refused.
    private func insertUnderCap(
        accountID: String,
        table: String,
        unfinishedOnly: Bool = false,
        maxOpen: Int,
        now: Date,
        _ insert: @escaping @Sendable (any SQLDatabase) async throws -> Void
    ) async throws -> Bool {
        let dialect = self.dialect
        return try await writeTransaction { sql in
            guard try await sql.lockAccount(accountID, dialect) else { return false }
            let open =
                try await sql.raw(
                    """
                    SELECT COUNT(*) AS n FROM \(unsafeRaw: table) WHERE account_id = \(bind: accountID) AND expires_at > \(bind: now.ms)
                    \(unsafeRaw: unfinishedOnly ? "AND finished = 0" : "")
                    """
                ).first()?.decode(column: "n", as: Int64.self) ?? 0
            guard open < maxOpen else { return false }
            try await insert(sql)
            return true
        }
    }

    package func deletePairingKeys(accountID: String) async throws {
        try await sql.raw("DELETE FROM pairing_keys WHERE account_id = \(bind: accountID)").run()
    }

    package func spendPairingKey(hash: String, now: Date) async throws -> String? {
        try await Self.spendPairingKey(sql, hash: hash, now: now)?.accountID
    }

    /// Deletes the key whatever its state; its account and the key it is bound to, if it had not expired.
    private static func spendPairingKey(
        _ sql: any SQLDatabase,
        hash: String,
        now: Date
    ) async throws -> (accountID: String, boundKey: String?)? {
        guard
            let row = try await sql.raw(
                "DELETE FROM pairing_keys WHERE key_hash = \(bind: hash) RETURNING account_id, expires_at, bound_key"
            ).first(),
            try row.decode(column: "expires_at", as: Int64.self) > now.ms
        else { return nil }
        return (
            try row.decode(column: "account_id", as: String.self),
            try row.decode(column: "bound_key", as: String?.self)
        )
    }

    package func pair(
        keyHash: String,
        signingKeyHash: String,
        now: Date,
        maxDevices: Int,
        _ records: @escaping @Sendable (_ accountID: String) throws -> PairingRecords
    ) async throws -> PairingWrite {
        let dialect = self.dialect
        do {
            return try await writeTransaction { sql in
                guard let (accountID, bound) = try await Self.spendPairingKey(sql, hash: keyHash, now: now) else {
                    return .keyInvalid
                }
                // A grant from an ID token pairs only the key its mobile payload named (spent all the same).
                if let bound, bound != signingKeyHash { return .otherKey(accountID: accountID) }
                // A lock deletes the account's pairing keys, but a key inserted by a request already past
                // its session check can land after it. FOR SHARE waits for a lock in flight.
                let locked = try await sql.raw(
                    """
                    SELECT g.locked FROM login_guards g JOIN accounts a ON a.username = g.username
                    WHERE a.id = \(bind: accountID)\(dialect.forShare(of: "g"))
                    """
                ).first()?.decode(column: "locked", as: Int64.self)
                guard (locked ?? 0) == 0 else { return .accountLocked }
                let r = try records(accountID)
                let added = try await Self.insertDevice(sql, r.device, maxActive: maxDevices, dialect: dialect)
                guard added == .done else { return .refused(added) }
                try await Self.insertAuthenticator(sql, r.authenticator)
                try await Self.insertDeviceSession(sql, r.session)
                return .paired(accountID: accountID)
            }
        } catch let e where Self.isUniqueViolation(e) {
            // A concurrent registration took a key between the check and the insert: nothing stored, and the
            // rollback gave the pairing key back. Spent all the same, as every other refusal spends it.
            _ = try? await writeTransaction { sql in
                try await Self.spendPairingKey(sql, hash: keyHash, now: now)
            }
            return .refused(.keyInUse)
        }
    }

    // MARK: MFATransactionStore

    package func createTransaction(
        id: String,
        accountID: String,
        bindingHash: String,
        state: Data,
        expiresAt: Date,
        maxOpen: Int,
        now: Date
    ) async throws -> Bool {
        let state = text(state)
        return try await insertUnderCap(
            accountID: accountID,
            table: "mfa_transactions",
            unfinishedOnly: true,
            maxOpen: maxOpen,
            now: now
        ) { sql in
            try await sql.raw(
                """
                INSERT INTO mfa_transactions (id, account_id, binding_hash, state, version, expires_at)
                VALUES (\(bind: id), \(bind: accountID), \(bind: bindingHash), \(bind: state), 1, \(bind: expiresAt.ms))
                """
            ).run()
        }
    }

    package func transaction(
        id: String
    ) async throws -> (accountID: String, bindingHash: String, state: Data, version: Int64)? {
        try await sql.raw("SELECT * FROM mfa_transactions WHERE id = \(bind: id)").first().map {
            (
                try $0.decode(column: "account_id", as: String.self),
                try $0.decode(column: "binding_hash", as: String.self),
                Data(try $0.decode(column: "state", as: String.self).utf8),
                try $0.decode(column: "version", as: Int64.self)
            )
        }
    }

    package func updateTransaction(id: String, state: Data, finished: Bool, expected: Int64) async throws -> Bool {
        try await !sql.raw(
            """
            UPDATE mfa_transactions SET state = \(bind: text(state)), version = version + 1, finished = \(bind: Int64(finished ? 1 : 0))
            WHERE id = \(bind: id) AND version = \(bind: expected) RETURNING version
            """
        ).all().isEmpty
    }

    package func addChallenges(
        _ challenges: [(deviceID: String, transactionID: String, jwt: String)],
        expiresAt: Date
    ) async throws {
        for c in challenges {
            try await sql.raw(
                """
                INSERT INTO mfa_challenges (device_id, transaction_id, jwt, expires_at)
                VALUES (\(bind: c.deviceID), \(bind: c.transactionID), \(bind: c.jwt), \(bind: expiresAt.ms))
                """
            ).run()
        }
    }

    package func pendingChallenges(deviceID: String, now: Date) async throws -> [String] {
        try await sql.raw(
            """
            SELECT jwt FROM mfa_challenges WHERE device_id = \(bind: deviceID) AND expires_at > \(bind: now.ms) ORDER BY expires_at
            """
        ).all().map { try $0.decode(column: "jwt", as: String.self) }
    }

    package func removeChallenges(transactionID: String) async throws {
        try await sql.raw("DELETE FROM mfa_challenges WHERE transaction_id = \(bind: transactionID)").run()
    }

    // MARK: RecoveryCodeStore (the count is each backend's: recoveryCodesLeft)

    package func replaceRecoveryCodes(accountID: String, hashes: [String]) async throws {
        try await database.transaction { tx in
            let sql = tx as! any SQLDatabase
            try await sql.raw("DELETE FROM recovery_codes WHERE account_id = \(bind: accountID)").run()
            for h in hashes {
                try await sql.raw(
                    "INSERT INTO recovery_codes (code_hash, account_id) VALUES (\(bind: h), \(bind: accountID))"
                ).run()
            }
        }
    }

    package func spendRecoveryCode(accountID: String, hash: String) async throws -> Bool {
        try await !sql.raw(
            """
            DELETE FROM recovery_codes WHERE code_hash = \(bind: hash) AND account_id = \(bind: accountID) RETURNING code_hash
            """
        ).all().isEmpty
    }

    // MARK: AuthenticationCodeStore

    package func createAuthCode(hash: String, bindingHash: String, state: Data, expiresAt: Date) async throws {
        try await sql.raw(
            """
            INSERT INTO auth_codes (code_hash, binding_hash, state, version, expires_at)
            VALUES (\(bind: hash), \(bind: bindingHash), \(bind: text(state)), 1, \(bind: expiresAt.ms))
            """
        ).run()
    }

    package func authCode(hash: String) async throws -> (state: Data, version: Int64)? {
        try await sql.raw("SELECT state, version FROM auth_codes WHERE code_hash = \(bind: hash)").first().map {
            (
                Data(try $0.decode(column: "state", as: String.self).utf8),
                try $0.decode(column: "version", as: Int64.self)
            )
        }
    }

    package func authCode(bindingHash: String) async throws -> (hash: String, state: Data, version: Int64)? {
        try await sql.raw("SELECT code_hash, state, version FROM auth_codes WHERE binding_hash = \(bind: bindingHash)")
            .first().map {
                (
                    try $0.decode(column: "code_hash", as: String.self),
                    Data(try $0.decode(column: "state", as: String.self).utf8),
                    try $0.decode(column: "version", as: Int64.self)
                )
            }
    }

    package func updateAuthCode(hash: String, state: Data, expected: Int64) async throws -> Bool {
        try await !sql.raw(
            """
            UPDATE auth_codes SET state = \(bind: text(state)), version = version + 1
            WHERE code_hash = \(bind: hash) AND version = \(bind: expected) RETURNING version
            """
        ).all().isEmpty
    }

    // MARK: Purge

    package func purgeExpiredMFA(now: Date) async throws {
        let day = now.addingTimeInterval(-86_400).ms
        try await sql.raw("DELETE FROM pairing_keys WHERE expires_at <= \(bind: now.ms)").run()
        try await sql.raw("DELETE FROM pairing_payloads WHERE expires_at <= \(bind: now.ms)").run()
        try await sql.raw("DELETE FROM mfa_challenges WHERE expires_at <= \(bind: now.ms)").run()
        // Kept a day after expiry: a late status poll still learns how it ended.
        try await sql.raw("DELETE FROM mfa_transactions WHERE expires_at <= \(bind: day)").run()
        try await sql.raw("DELETE FROM auth_codes WHERE expires_at <= \(bind: day)").run()
        try await sql.raw(
            "DELETE FROM authenticator_logs WHERE created_at <= \(bind: now.addingTimeInterval(-MFAService.logRetention).ms)"
        ).run()
    }
}
