import Foundation

/// The storage of sign-ins waiting for a second factor (`MFATransaction`) and of the push challenges
/// sent to authenticators for them. A transaction changes only by compare-and-set on its version.
public protocol MFATransactionStore: Sendable {
    /// Inserts the transaction unless the account already has `maxOpen` unexpired, unfinished ones
    /// (counted and inserted atomically); false when it has.
    func createTransaction(
        id: String,
        accountID: String,
        bindingHash: String,
        state: Data,
        expiresAt: Date,
        maxOpen: Int,
        now: Date
    ) async throws -> Bool
    func transaction(id: String) async throws -> (accountID: String, bindingHash: String, state: Data, version: Int64)?
    /// `finished`: the new state is terminal (it no longer counts toward the cap on open transactions).
    func updateTransaction(id: String, state: Data, finished: Bool, expected: Int64) async throws -> Bool

    func addChallenges(
        _ challenges: [(deviceID: String, transactionID: String, jwt: String)],
        expiresAt: Date
    ) async throws
    func pendingChallenges(deviceID: String, now: Date) async throws -> [String]
    func removeChallenges(transactionID: String) async throws
}
