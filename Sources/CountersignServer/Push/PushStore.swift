import Foundation

/// The storage the push channel needs beyond the message queue. Each backend's storage implements it.
public protocol PushStore: Sendable {
    func createTicket(hash: String, deviceID: String, sessionHash: String, expiresAt: Date) async throws
    /// Deletes the ticket and returns its device session's token hash if it had not expired.
    func spendTicket(hash: String, now: Date) async throws -> String?
    /// Marks up to `limit` delayed messages that are due and not yet announced as announced, and returns
    /// their ids and the accounts with queue entries for them. Each message is claimed by exactly one caller, however
    /// many nodes ask at once (PostgreSQL: `FOR UPDATE SKIP LOCKED`).
    func claimDue(now: Date, limit: Int) async throws -> (messages: [String], accounts: [String])
    func purgeExpiredTickets(now: Date) async throws
}
