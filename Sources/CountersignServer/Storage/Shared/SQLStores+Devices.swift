import FluentKit
import Foundation
import PostgresNIO
import SQLKit
import SQLiteNIO

/// `DeviceStore` over SQLKit, for SQLite and PostgreSQL, but for the device-session read every device
/// request starts with, which each backend does its own way with the same SQL (`SessionContextQuery`):
/// SQLite on a direct reader, PostgreSQL grouped on its session lanes. Writes that check then insert run in one
/// transaction; on PostgreSQL the account row is locked first (`FOR UPDATE`), so two registrations
/// cannot both pass the device limit, and unique indexes on the key IDs back the reuse check.
extension SQLStores {
    // MARK: Challenges

    package func createChallenge(hash: String, kind: String, subject: String, expiresAt: Date) async throws {
        try await sql.raw(
            """
            INSERT INTO device_challenges (challenge_hash, kind, subject, expires_at)
            VALUES (\(bind: hash), \(bind: kind), \(bind: subject), \(bind: expiresAt.ms))
            """
        ).run()
    }

    package func spendChallenge(hash: String, kind: String, subject: String, now: Date) async throws -> Bool {
        try await spendChallenge(hash: hash, kinds: [kind], subject: subject, now: now)
    }

    // MARK: Devices

    private static func keysKnown(_ sql: any SQLDatabase, _ ids: [String]) async throws -> Bool {
        try await sql.raw(
            """
            SELECT device_id FROM device_keys WHERE signing_key_id IN (\(binds: ids)) OR encryption_key_id IN (\(binds: ids))
            """
        ).first() != nil
    }

    package func addDevice(_ d: DeviceRecord, proof: KeySelfProof?, maxActive: Int) async throws -> DeviceWrite {
        let dialect = self.dialect
        do {
            return try await writeTransaction { sql in
                try await Self.insertDevice(sql, d, proof: proof, maxActive: maxActive, dialect: dialect)
            }
        } catch let e where Self.isUniqueViolation(e) {
            return .keyInUse  // a concurrent registration took the key between the check and the insert
        }
    }

    /// Inserts the device and its first key-history row, inside the caller's write transaction, unless
    /// the account (whose row it locks on PostgreSQL) has `maxActive` active devices or a key ID is known.
    static func insertDevice(
        _ sql: any SQLDatabase,
        _ d: DeviceRecord,
        proof: KeySelfProof? = nil,
        maxActive: Int,
        dialect: StorageDialect
    ) async throws -> DeviceWrite {
        guard try await sql.lockAccount(d.accountID, dialect) else { return .notFound }
        let active =
            try await sql.raw(
                """
                SELECT COUNT(*) AS n FROM devices WHERE account_id = \(bind: d.accountID) AND revoked_at IS NULL
                """
            ).first()?.decode(column: "n", as: Int64.self) ?? 0
        guard active < maxActive else { return .limitReached }
        guard try await !keysKnown(sql, [d.signingKeyID, d.encryptionKeyID]) else { return .keyInUse }
        try await sql.raw(
            """
            INSERT INTO devices (id, account_id, name, signing_key, signing_key_id, encryption_key, encryption_key_id,
                                 created_at, keys_since, last_seen_at, revoked_at, kind)
            VALUES (\(bind: d.id), \(bind: d.accountID), \(bind: d.name), \(bind: Data(d.signingKey)), \(bind: d.signingKeyID),
                    \(bind: Data(d.encryptionKey)), \(bind: d.encryptionKeyID), \(bind: d.createdAt.ms), \(bind: d.keysSince.ms), NULL, NULL,
                    \(bind: d.kind))
            """
        ).run()
        try await insertKey(
            sql,
            deviceID: d.id,
            accountID: d.accountID,
            signingKey: d.signingKey,
            signingKeyID: d.signingKeyID,
            encryptionKey: d.encryptionKey,
            encryptionKeyID: d.encryptionKeyID,
            rotationSignature: nil,
            proof: proof,
            at: d.createdAt
        )
        return .done
    }

    private static func insertKey(
        _ sql: any SQLDatabase,
        deviceID: String,
        accountID: String,
        signingKey: [UInt8],
        signingKeyID: String,
        encryptionKey: [UInt8],
        encryptionKeyID: String,
        rotationSignature: [UInt8]?,
        proof: KeySelfProof?,
        at: Date
    ) async throws {
        try await sql.raw(
            """
            INSERT INTO device_keys (device_id, account_id, signing_key, signing_key_id, encryption_key, encryption_key_id, rotation_signature,
                                     key_signature, registration_challenge, added_at, retired_at, retired_because)
            VALUES (\(bind: deviceID), \(bind: accountID), \(bind: Data(signingKey)), \(bind: signingKeyID), \(bind: Data(encryptionKey)),
                    \(bind: encryptionKeyID), \(bind: rotationSignature.map { Data($0) }), \(bind: proof.map { Data($0.signature) }),
                    \(bind: proof?.challenge.map { Data($0) }), \(bind: at.ms), NULL, NULL)
            """
        ).run()
    }

    /// A unique-index violation on a key ID (`device_keys_signing`, `device_keys_encryption`), read from
    /// the database's own code and constraint name, not from message text.
    static func isUniqueViolation(_ error: any Error) -> Bool {
        if let p = error as? PSQLError, let info = p.serverInfo {
            return info[.sqlState] == "23505" && (info[.constraintName]?.hasPrefix("device_keys_") ?? false)
        }
        if let s = error as? SQLiteError {
            return [.constraint, .constraintUniqueFailed].contains(s.reason) && s.message.contains("device_keys.")
        }
        return false
    }

    package func device(id: String) async throws -> DeviceRecord? {
        try await sql.raw("SELECT * FROM devices WHERE id = \(bind: id)").first().map(Self.device)
    }

    package func devices(accountID: String, includeRevoked: Bool) async throws -> [DeviceRecord] {
        let filter: SQLQueryString = includeRevoked ? "" : " AND revoked_at IS NULL"
        return try await sql.raw(
            "SELECT * FROM devices WHERE account_id = \(bind: accountID)\(filter) ORDER BY created_at, id"
        ).all().map(Self.device)
    }

    static func device(_ row: any SQLRow) throws -> DeviceRecord {
        DeviceRecord(
            id: try row.decode(column: "id", as: String.self),
            accountID: try row.decode(column: "account_id", as: String.self),
            name: try row.decode(column: "name", as: String.self),
            signingKey: Array(try row.decode(column: "signing_key", as: Data.self)),
            signingKeyID: try row.decode(column: "signing_key_id", as: String.self),
            encryptionKey: Array(try row.decode(column: "encryption_key", as: Data.self)),
            encryptionKeyID: try row.decode(column: "encryption_key_id", as: String.self),
            createdAt: Date(ms: try row.decode(column: "created_at", as: Int64.self)),
            keysSince: Date(ms: try row.decode(column: "keys_since", as: Int64.self)),
            lastSeenAt: try row.decode(column: "last_seen_at", as: Int64?.self).map(Date.init(ms:)),
            revokedAt: try row.decode(column: "revoked_at", as: Int64?.self).map(Date.init(ms:)),
            kind: try row.decode(column: "kind", as: String.self)
        )
    }

    package func keyHistory(accountID: String) async throws -> [KeyHistoryRecord] {
        // Messaging devices' keys only: nothing is ever sealed to an authenticator, so it is not in the directory.
        try await sql.raw(
            """
            SELECT k.* FROM device_keys k JOIN devices d ON d.id = k.device_id
            WHERE k.account_id = \(bind: accountID) AND d.kind = 'messaging' ORDER BY k.added_at, k.id
            """
        ).all().map { row in
            KeyHistoryRecord(
                deviceID: try row.decode(column: "device_id", as: String.self),
                signingKey: Array(try row.decode(column: "signing_key", as: Data.self)),
                signingKeyID: try row.decode(column: "signing_key_id", as: String.self),
                encryptionKeyID: try row.decode(column: "encryption_key_id", as: String.self),
                addedAt: Date(ms: try row.decode(column: "added_at", as: Int64.self)),
                retiredAt: try row.decode(column: "retired_at", as: Int64?.self).map(Date.init(ms:)),
                retiredBecause: try row.decode(column: "retired_because", as: String?.self),
                encryptionKey: try row.decode(column: "encryption_key", as: Data?.self).map { Array($0) },
                rotationSignature: try row.decode(column: "rotation_signature", as: Data?.self).map { Array($0) },
                vouch: try Self.vouch(row),
                proof: try row.decode(column: "key_signature", as: Data?.self).map {
                    KeySelfProof(
                        challenge: try row.decode(column: "registration_challenge", as: Data?.self).map { Array($0) },
                        signature: Array($0)
                    )
                }
            )
        }
    }

    static func vouch(_ row: any SQLRow) throws -> KeyVouch? {
        guard let by = try row.decode(column: "vouched_by", as: String?.self),
            let at = try row.decode(column: "vouched_at", as: Int64?.self),
            let signature = try row.decode(column: "vouch_signature", as: Data?.self)
        else { return nil }
        return KeyVouch(deviceID: by, vouchedAt: at, signature: Array(signature))
    }

    package func approvers(accountID: String) async throws -> [(DeviceRecord, KeyVouch)] {
        try await sql.raw(
            """
            SELECT d.*, k.vouched_by, k.vouched_at, k.vouch_signature FROM devices d
            JOIN device_keys k ON k.device_id = d.id AND k.signing_key_id = d.signing_key_id AND k.retired_at IS NULL
            WHERE d.account_id = \(bind: accountID) AND d.kind = 'authenticator' AND d.revoked_at IS NULL
              AND k.vouched_by IS NOT NULL
            ORDER BY d.created_at, d.id
            """
        ).all().compactMap { row in
            guard let endorsement = try Self.vouch(row) else { return nil }
            return (try Self.device(row), endorsement)
        }
    }

    package func vouch(
        deviceID: String,
        accountID: String,
        kind: String,
        signingKeyID: String,
        vouch: KeyVouch,
        voucherSigningKeyID: String
    ) async throws
        -> DeviceWrite
    {
        let dialect = self.dialect
        return try await writeTransaction { sql in
            // Serialised with rotations, registrations and revocations of this account.
            guard try await sql.lockAccount(accountID, dialect),
                let row = try await sql.raw(
                    "SELECT * FROM devices WHERE id = \(bind: deviceID) AND account_id = \(bind: accountID)"
                ).first()
            else { return .notFound }
            let device = try Self.device(row)
            guard device.isActive, device.kind == kind else { return .notFound }
            // The vouching device, revoked or re-keyed meanwhile, vouches for nothing.
            guard
                try await sql.raw(
                    """
                    SELECT id FROM devices WHERE id = \(bind: vouch.deviceID) AND account_id = \(bind: accountID)
                      AND revoked_at IS NULL AND signing_key_id = \(bind: voucherSigningKeyID)
                    """
                ).first() != nil
            else { return .notFound }
            guard device.signingKeyID == signingKeyID else { return .changed }
            let vouched = try await sql.raw(
                "SELECT 1 AS one FROM device_keys WHERE device_id = \(bind: deviceID) AND vouched_by IS NOT NULL"
            ).first()
            // A device is linked once; an authenticator's endorsement is replaced (the service refuses while
            // the one it has still holds).
            guard vouched == nil || kind == DeviceRecord.authenticator else { return .alreadyVouched }
            try await sql.raw(
                """
                UPDATE device_keys SET vouched_by = \(bind: vouch.deviceID), vouched_at = \(bind: vouch.vouchedAt),
                    vouch_signature = \(bind: Data(vouch.signature))
                WHERE device_id = \(bind: deviceID) AND signing_key_id = \(bind: signingKeyID) AND retired_at IS NULL
                """
            ).run()
            return .done
        }
    }

    package func rename(deviceID: String, accountID: String, name: String) async throws -> DeviceWrite {
        let rows = try await sql.raw(
            """
            UPDATE devices SET name = \(bind: name) WHERE id = \(bind: deviceID) AND account_id = \(bind: accountID) RETURNING id
            """
        ).all()
        return rows.isEmpty ? .notFound : .done
    }

    package func revoke(deviceID: String, accountID: String, at: Date) async throws -> DeviceWrite {
        let dialect = self.dialect
        return try await writeTransaction { sql in
            // Serialised with sends to this account (they hold the row FOR SHARE): none queues to a device being revoked.
            guard try await sql.lockAccount(accountID, dialect) else { return .notFound }
            let rows = try await sql.raw(
                """
                UPDATE devices SET revoked_at = \(bind: at.ms)
                WHERE id = \(bind: deviceID) AND account_id = \(bind: accountID) AND revoked_at IS NULL RETURNING id
                """
            ).all()
            guard !rows.isEmpty else { return .notFound }
            try await sql.raw(
                """
                UPDATE device_keys SET retired_at = \(bind: at.ms), retired_because = 'revoked'
                WHERE device_id = \(bind: deviceID) AND retired_at IS NULL
                """
            ).run()
            try await sql.raw("DELETE FROM device_sessions WHERE device_id = \(bind: deviceID)").run()
            try await sql.raw("DELETE FROM message_queue WHERE device_id = \(bind: deviceID)").run()
            // Its push service is told nothing more (PROTOCOL §2.2).
            try await sql.raw("DELETE FROM push_targets WHERE device_id = \(bind: deviceID)").run()
            // The browser bound to it stays signed in no longer (PROTOCOL §1.1). Its sessions go on to their own
            // limits: the page learns of the revocation through one, and wipes its data (SPEC §14.5).
            try await sql.raw("DELETE FROM session_bindings WHERE device_id = \(bind: deviceID)").run()
            return .done
        }
    }

    package func setRevocationTokenHash(
        _ hash: [UInt8],
        deviceID: String,
        accountID: String,
        signingKeyID: String
    ) async throws
        -> DeviceWrite
    {
        try await sql.raw(
            """
            UPDATE devices SET revocation_token_hash = \(bind: Data(hash))
            WHERE id = \(bind: deviceID) AND account_id = \(bind: accountID) AND revoked_at IS NULL
              AND signing_key_id = \(bind: signingKeyID) RETURNING id
            """
        ).all().isEmpty ? .notFound : .done
    }

    package func revocationTokenHash(deviceID: String) async throws -> (accountID: String, hash: [UInt8])? {
        guard
            let row = try await sql.raw(
                """
                SELECT account_id, revocation_token_hash FROM devices
                WHERE id = \(bind: deviceID) AND revoked_at IS NULL AND revocation_token_hash IS NOT NULL
                """
            ).first()
        else { return nil }
        return (
            try row.decode(column: "account_id", as: String.self),
            Array(try row.decode(column: "revocation_token_hash", as: Data.self))
        )
    }

    package func rotate(
        deviceID: String,
        expectedSigningKeyID: String,
        signingKey: [UInt8],
        signingKeyID: String,
        encryptionKey: [UInt8],
        encryptionKeyID: String,
        oldKeySignature: [UInt8],
        newKeySignature: [UInt8],
        at: Date
    ) async throws -> DeviceWrite {
        let dialect = self.dialect
        do {
            return try await writeTransaction { sql in
                guard let row = try await sql.raw("SELECT * FROM devices WHERE id = \(bind: deviceID)").first() else {
                    return .notFound
                }
                // Serialised with sends (FOR SHARE), registrations and revocations of this account.
                guard try await sql.lockAccount(try Self.device(row).accountID, dialect) else { return .notFound }
                guard let locked = try await sql.raw("SELECT * FROM devices WHERE id = \(bind: deviceID)").first()
                else { return .notFound }
                let current = try Self.device(locked)
                guard current.isActive else { return .notFound }
                guard current.signingKeyID == expectedSigningKeyID else { return .changed }
                guard try await !Self.keysKnown(sql, [signingKeyID, encryptionKeyID]) else { return .keyInUse }
                try await sql.raw(
                    """
                    UPDATE device_keys SET retired_at = \(bind: at.ms), retired_because = 'rotated'
                    WHERE device_id = \(bind: deviceID) AND retired_at IS NULL
                    """
                ).run()
                try await sql.raw(
                    """
                    UPDATE devices SET signing_key = \(bind: Data(signingKey)), signing_key_id = \(bind: signingKeyID),
                        encryption_key = \(bind: Data(encryptionKey)), encryption_key_id = \(bind: encryptionKeyID), keys_since = \(bind: at.ms)
                    WHERE id = \(bind: deviceID)
                    """
                ).run()
                try await Self.insertKey(
                    sql,
                    deviceID: deviceID,
                    accountID: current.accountID,
                    signingKey: signingKey,
                    signingKeyID: signingKeyID,
                    encryptionKey: encryptionKey,
                    encryptionKeyID: encryptionKeyID,
                    rotationSignature: oldKeySignature,
                    proof: KeySelfProof(challenge: nil, signature: newKeySignature),
                    at: at
                )
                return .done
            }
        } catch let e where Self.isUniqueViolation(e) {
            return .keyInUse
        }
    }

    package func setKeyProof(deviceID: String, signingKeyID: String, proof: KeySelfProof) async throws -> DeviceWrite {
        try await writeTransaction { sql in
            guard
                let current = try await sql.raw(
                    """
                    SELECT CASE WHEN key_signature IS NULL THEN 0 ELSE 1 END AS proven FROM device_keys
                    WHERE device_id = \(bind: deviceID) AND signing_key_id = \(bind: signingKeyID) AND retired_at IS NULL
                    """
                ).first()
            else { return .notFound }
            if try current.decode(column: "proven", as: Int.self) == 1 { return .unchanged }
            try await sql.raw(
                """
                UPDATE device_keys SET key_signature = \(bind: Data(proof.signature)),
                    registration_challenge = \(bind: proof.challenge.map { Data($0) })
                WHERE device_id = \(bind: deviceID) AND signing_key_id = \(bind: signingKeyID) AND retired_at IS NULL
                    AND key_signature IS NULL
                """
            ).run()
            return .done
        }
    }

    package func touchDevice(id: String, at: Date) async throws {
        try await sql.raw("UPDATE devices SET last_seen_at = \(bind: at.ms) WHERE id = \(bind: id)").run()
    }

    // MARK: Device sessions

    package func createDeviceSession(_ s: DeviceSessionRecord) async throws {
        try await Self.insertDeviceSession(sql, s)
    }

    static func insertDeviceSession(_ sql: any SQLDatabase, _ s: DeviceSessionRecord) async throws {
        try await sql.raw(
            """
            INSERT INTO device_sessions (token_hash, device_id, account_id, created_at, last_used_at, expires_at)
            VALUES (\(bind: s.tokenHash), \(bind: s.deviceID), \(bind: s.accountID), \(bind: s.createdAt.ms), \(bind: s.lastUsedAt.ms),
                    \(bind: s.expiresAt.ms))
            """
        ).run()
    }

    package func deviceSession(tokenHash: String) async throws -> DeviceSessionRecord? {
        try await sql.raw("SELECT * FROM device_sessions WHERE token_hash = \(bind: tokenHash)").first().map { row in
            DeviceSessionRecord(
                tokenHash: try row.decode(column: "token_hash", as: String.self),
                deviceID: try row.decode(column: "device_id", as: String.self),
                accountID: try row.decode(column: "account_id", as: String.self),
                createdAt: Date(ms: try row.decode(column: "created_at", as: Int64.self)),
                lastUsedAt: Date(ms: try row.decode(column: "last_used_at", as: Int64.self)),
                expiresAt: Date(ms: try row.decode(column: "expires_at", as: Int64.self))
            )
        }
    }

    package func touchDeviceSession(tokenHash: String, at: Date) async throws {
        try await sql.raw(
            "UPDATE device_sessions SET last_used_at = \(bind: at.ms) WHERE token_hash = \(bind: tokenHash)"
        ).run()
    }

    package func deleteDeviceSession(tokenHash: String) async throws {
        try await sql.raw("DELETE FROM device_sessions WHERE token_hash = \(bind: tokenHash)").run()
    }

    package func deleteDeviceSessions(deviceID: String, keeping: String) async throws {
        try await sql.raw(
            "DELETE FROM device_sessions WHERE device_id = \(bind: deviceID) AND token_hash <> \(bind: keeping)"
        ).run()
    }

    package func purgeExpiredDevices(now: Date, idle: TimeInterval) async throws {
        try await sql.raw("DELETE FROM device_challenges WHERE expires_at <= \(bind: now.ms)").run()
        try await sql.raw(
            """
            DELETE FROM device_sessions WHERE expires_at <= \(bind: now.ms) OR last_used_at <= \(bind: now.addingTimeInterval(-idle).ms)
            """
        ).run()
    }
}
