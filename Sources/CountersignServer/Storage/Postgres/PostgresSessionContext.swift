import Foundation
import Logging
import NIOCore
import PostgresNIO

/// The device-session read that starts every device request, on PostgreSQL as a named prepared
/// statement (PostgresNIO prepares it once per connection; the server skips parsing the three-table join),
/// for one or several token hashes at once (`PostgresSessionReads` groups concurrent requests): one row
/// per live hash, read by position instead of through SQLKit's by-name decoding. The same text as the
/// direct SQLite reader's (`SessionContextQuery`).
struct PostgresSessionContext: PostgresPreparedStatement {
    static let sql = SessionContextQuery.sql(tokenHashParameter: "ANY($1)")
    typealias Row = (DeviceSessionRecord, DeviceRecord, AccountRecord)

    var tokenHashes: [String]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(tokenHashes)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let r = row.makeRandomAccess()
        func text(_ i: Int) throws -> String { try r[i].decode(String.self) }
        func int(_ i: Int) throws -> Int64 { try r[i].decode(Int64.self) }
        func date(_ i: Int) throws -> Date { Date(ms: try int(i)) }
        func optionalDate(_ i: Int) throws -> Date? { try r[i].decode(Int64?.self).map(Date.init(ms:)) }
        func bytes(_ i: Int) throws -> [UInt8] { Array(try r[i].decode(ByteBuffer.self).readableBytesView) }
        let session = DeviceSessionRecord(
            tokenHash: try text(0),
            deviceID: try text(1),
            accountID: try text(2),
            createdAt: try date(3),
            lastUsedAt: try date(4),
            expiresAt: try date(5)
        )
        let device = DeviceRecord(
            id: try text(6),
            accountID: try text(7),
            name: try text(8),
            signingKey: try bytes(9),
            signingKeyID: try text(10),
            encryptionKey: try bytes(11),
            encryptionKeyID: try text(12),
            createdAt: try date(13),
            keysSince: try date(14),
            lastSeenAt: try optionalDate(15),
            revokedAt: try optionalDate(16),
            kind: try text(24)
        )
        let account = AccountRecord(
            id: try text(17),
            username: try text(18),
            name: try text(19),
            lastname: try text(20),
            passwordHash: try text(21),
            reauthMinutes: Int(try int(22)),
            createdAt: try date(23)
        )
        return (session, device, account)
    }

    /// The rows for `tokenHashes` (one per live hash), read on `connection`.
    static func rows(_ connection: PostgresConnection, tokenHashes: [String], logger: Logger) async throws -> [Row] {
        var rows: [Row] = []
        for try await row in try await connection.execute(
            PostgresSessionContext(tokenHashes: tokenHashes),
            logger: logger
        ) { rows.append(row) }
        return rows
    }
}
