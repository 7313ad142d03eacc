import CountersignAPI
import Foundation
import SQLKit

/// `NotificationStore` over SQLKit, for SQLite and PostgreSQL. Keys are stored as base64url text.
extension SQLStores {
    package func savePushTarget(_ t: PushTarget) async throws -> Bool {
        try await writeTransaction { sql in
            guard
                try await sql.raw(
                    "SELECT id FROM devices WHERE id = \(bind: t.deviceID) AND account_id = \(bind: t.accountID) AND revoked_at IS NULL"
                ).first() != nil
            else { return false }
            // A device seen through a connection stays marked (by whichever node holds it) under its new target.
            let kept = try await sql.raw(
                "SELECT live_until, live_by FROM push_targets WHERE device_id = \(bind: t.deviceID)"
            ).first()
            let liveUntil = try kept?.decode(column: "live_until", as: Int64.self) ?? 0
            let liveBy = try kept?.decode(column: "live_by", as: String?.self) ?? nil
            try await sql.raw("DELETE FROM push_targets WHERE device_id = \(bind: t.deviceID)").run()
            try await sql.raw(
                """
                INSERT INTO push_targets (device_id, account_id, channel, address, p256dh, auth, environment, created_at,
                    live_until, live_by)
                VALUES (\(bind: t.deviceID), \(bind: t.accountID), \(bind: t.channel.rawValue), \(bind: t.address),
                        \(bind: Base64URL(t.p256dh).text), \(bind: Base64URL(t.auth).text), \(bind: t.environment),
                        \(bind: t.createdAt.ms), \(bind: liveUntil), \(bind: liveBy))
                """
            ).run()
            return true
        }
    }

    package func pushTarget(deviceID: String) async throws -> PushTarget? {
        try await pushTargets(
            "SELECT t.* FROM push_targets t WHERE t.device_id = \(bind: deviceID)"
        ).first
    }

    package func deletePushTarget(deviceID: String) async throws -> Bool {
        !(try await sql.raw("DELETE FROM push_targets WHERE device_id = \(bind: deviceID) RETURNING device_id").all()
            .isEmpty)
    }

    package func deletePushTarget(deviceID: String, address: String) async throws {
        try await sql.raw(
            "DELETE FROM push_targets WHERE device_id = \(bind: deviceID) AND address = \(bind: address)"
        ).run()
    }

    package func deletePushTargets(address: String) async throws {
        try await sql.raw("DELETE FROM push_targets WHERE address = \(bind: address)").run()
    }

    package func pushTargets(messageIDs: [String], now: Date) async throws -> [(target: PushTarget, messageID: String)]
    {
        guard !messageIDs.isEmpty else { return [] }
        let rows = try await sql.raw(
            """
            SELECT t.*, q.message_id FROM message_queue q JOIN push_targets t ON t.device_id = q.device_id
            JOIN devices d ON d.id = t.device_id JOIN messages m ON m.id = q.message_id
            WHERE q.message_id IN (\(binds: messageIDs)) AND d.revoked_at IS NULL AND t.account_id <> m.sender_account
                AND t.live_until <= \(bind: now.ms)
            """
        ).all()
        return try rows.map { (try Self.pushTarget($0), try $0.decode(column: "message_id", as: String.self)) }
    }

    package func pushTargets(deviceIDs: [String], now: Date) async throws -> [PushTarget] {
        guard !deviceIDs.isEmpty else { return [] }
        return try await pushTargets(
            """
            SELECT t.* FROM push_targets t JOIN devices d ON d.id = t.device_id
            WHERE t.device_id IN (\(binds: deviceIDs)) AND d.revoked_at IS NULL AND t.live_until <= \(bind: now.ms)
            """
        )
    }

    package func setLive(deviceIDs: [String], until: Date?, by node: String) async throws {
        guard !deviceIDs.isEmpty else { return }
        if let until {
            try await sql.raw(
                """
                UPDATE push_targets SET live_until = \(bind: until.ms), live_by = \(bind: node)
                WHERE device_id IN (\(binds: deviceIDs))
                """
            ).run()
        } else {
            try await sql.raw(
                """
                UPDATE push_targets SET live_until = 0, live_by = NULL
                WHERE device_id IN (\(binds: deviceIDs)) AND live_by = \(bind: node)
                """
            ).run()
        }
    }

    package func clearLive(by node: String) async throws {
        try await sql.raw("UPDATE push_targets SET live_until = 0, live_by = NULL WHERE live_by = \(bind: node)").run()
    }

    private func pushTargets(_ query: SQLQueryString) async throws -> [PushTarget] {
        try await sql.raw(query).all().map(Self.pushTarget)
    }

    private static func pushTarget(_ row: any SQLRow) throws -> PushTarget {
        PushTarget(
            deviceID: try row.decode(column: "device_id", as: String.self),
            accountID: try row.decode(column: "account_id", as: String.self),
            channel: PushTarget.Channel(rawValue: try row.decode(column: "channel", as: String.self)) ?? .webPush,
            address: try row.decode(column: "address", as: String.self),
            p256dh: Base64URL(text: try row.decode(column: "p256dh", as: String.self))?.bytes ?? [],
            auth: Base64URL(text: try row.decode(column: "auth", as: String.self))?.bytes ?? [],
            environment: try row.decode(column: "environment", as: String?.self),
            createdAt: Date(ms: try row.decode(column: "created_at", as: Int64.self))
        )
    }
}
