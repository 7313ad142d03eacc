import Foundation

/// The second-factor reads every sign-in makes (has the account an authenticator, an authenticator app,
/// recovery codes?), on a direct read-only connection: one hop each, statements prepared once. The SQL
/// is PostgreSQL's (`PostgresStorage+MFA.swift`) with the columns named.
enum DirectMFAReader {
    static let authenticatorsOfAccount = """
        SELECT a.device_id, a.account_id, a.push_allowed, a.totp_secret, a.totp_last_step, a.paired_at
        FROM authenticators a JOIN devices d ON d.id = a.device_id
        WHERE a.account_id = ?1 AND d.revoked_at IS NULL ORDER BY a.paired_at
        """
    static let stateOfAccount = "SELECT state, version FROM mfa_accounts WHERE account_id = ?1"
    static let recoveryCodesOfAccount = "SELECT COUNT(*) FROM recovery_codes WHERE account_id = ?1"

    static func authenticators(_ c: DirectSQLite, accountID: String) throws -> [AuthenticatorRecord] {
        let s = try c.statement(authenticatorsOfAccount)
        s.bind(1, accountID)
        var found: [AuthenticatorRecord] = []
        try s.forEach { r in
            found.append(
                AuthenticatorRecord(
                    deviceID: r.string(0),
                    accountID: r.string(1),
                    pushAllowed: r.int64(2) != 0,
                    sealedTOTPSecret: r.bytes(3),
                    lastStep: r.isNull(4) ? nil : UInt64(r.int64(4)),
                    pairedAt: Date(ms: r.int64(5))
                )
            )
        }
        return found
    }

    static func accountState(_ c: DirectSQLite, accountID: String) throws -> (state: Data, version: Int64)? {
        let s = try c.statement(stateOfAccount)
        s.bind(1, accountID)
        var found: (Data, Int64)?
        try s.forEach { r in found = (Data(r.string(0).utf8), r.int64(1)) }
        return found
    }

    static func recoveryCodesLeft(_ c: DirectSQLite, accountID: String) throws -> Int {
        let s = try c.statement(recoveryCodesOfAccount)
        s.bind(1, accountID)
        var n: Int64 = 0
        try s.forEach { n = $0.int64(0) }
        return Int(n)
    }
}
