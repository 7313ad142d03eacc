import FluentKit
import Foundation
import SQLKit

/// The second-factor reads of every sign-in on PostgreSQL, on the pool (SQLite reads them on a direct
/// reader: `SQLiteStorage+MFA.swift`); the rest of `MFAStore` is the shared SQL (`SQLStores+MFA.swift`).
extension PostgresStorage {
    package func accountState(_ accountID: String) async throws -> (state: Data, version: Int64)? {
        try await sql.raw("SELECT state, version FROM mfa_accounts WHERE account_id = \(bind: accountID)").first().map {
            (
                Data(try $0.decode(column: "state", as: String.self).utf8),
                try $0.decode(column: "version", as: Int64.self)
            )
        }
    }

    package func authenticators(accountID: String) async throws -> [AuthenticatorRecord] {
        // Only those whose device is still active: revoking the device unpairs it.
        try await sql.raw(
            """
            SELECT a.* FROM authenticators a JOIN devices d ON d.id = a.device_id
            WHERE a.account_id = \(bind: accountID) AND d.revoked_at IS NULL ORDER BY a.paired_at
            """
        ).all().map(Self.authenticator)
    }

    package func recoveryCodesLeft(accountID: String) async throws -> Int {
        Int(
            try await sql.raw("SELECT COUNT(*) AS n FROM recovery_codes WHERE account_id = \(bind: accountID)").first()?
                .decode(column: "n", as: Int64.self) ?? 0
        )
    }
}
