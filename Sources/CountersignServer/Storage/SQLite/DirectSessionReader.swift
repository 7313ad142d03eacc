import Foundation

/// The device-session lookup that starts every device request, on a direct read-only SQLite
/// connection: one hop, one prepared statement. Read-only WAL connections see the last committed state,
/// so a revocation (which deletes the device's sessions and marks it revoked) is seen by the next
/// request; nothing is cached between requests.
enum DirectSessionReader {
    static let context = SessionContextQuery.sql(tokenHashParameter: "?1")

    static func deviceSessionContext(
        _ c: DirectSQLite,
        tokenHash: String
    ) throws -> (DeviceSessionRecord, DeviceRecord, AccountRecord)? {
        let s = try c.statement(context)
        s.bind(1, tokenHash)
        var found: (DeviceSessionRecord, DeviceRecord, AccountRecord)?
        try s.forEach { r in
            let session = DeviceSessionRecord(
                tokenHash: r.string(0),
                deviceID: r.string(1),
                accountID: r.string(2),
                createdAt: Date(ms: r.int64(3)),
                lastUsedAt: Date(ms: r.int64(4)),
                expiresAt: Date(ms: r.int64(5))
            )
            let device = DeviceRecord(
                id: r.string(6),
                accountID: r.string(7),
                name: r.string(8),
                signingKey: r.bytes(9),
                signingKeyID: r.string(10),
                encryptionKey: r.bytes(11),
                encryptionKeyID: r.string(12),
                createdAt: Date(ms: r.int64(13)),
                keysSince: Date(ms: r.int64(14)),
                lastSeenAt: r.isNull(15) ? nil : Date(ms: r.int64(15)),
                revokedAt: r.isNull(16) ? nil : Date(ms: r.int64(16)),
                kind: r.string(24)
            )
            found = (session, device, DirectAccountStore.account(r, from: 17))
        }
        return found
    }
}
