import Foundation

/// The second-factor reads of every sign-in on a direct reader (`DirectMFAReader`; PostgreSQL's:
/// `PostgresStorage+MFA.swift`); the rest of `MFAStore` is the shared SQL (`SQLStores+MFA.swift`). Readers see the last committed state, as the writer would between
/// transactions: every MFA write is committed before its caller goes on.
extension SQLiteStorage {
    package func authenticators(accountID: String) async throws -> [AuthenticatorRecord] {
        try await quickRead { try DirectMFAReader.authenticators($0, accountID: accountID) }
    }

    package func accountState(_ accountID: String) async throws -> (state: Data, version: Int64)? {
        try await quickRead { try DirectMFAReader.accountState($0, accountID: accountID) }
    }

    package func recoveryCodesLeft(accountID: String) async throws -> Int {
        try await quickRead { try DirectMFAReader.recoveryCodesLeft($0, accountID: accountID) }
    }
}
