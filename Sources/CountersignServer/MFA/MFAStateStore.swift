import Foundation

/// The storage of one account's multi-factor state (`MFAService.AccountState`: its settings, push
/// fatigue, the authenticator app's secret), one versioned value per account.
public protocol MFAStateStore: Sendable {
    func accountState(_ accountID: String) async throws -> (state: Data, version: Int64)?
    /// Writes when the stored version is `expected` (nil: no row yet); false when someone else wrote first.
    func saveAccountState(_ accountID: String, state: Data, expected: Int64?) async throws -> Bool
}
