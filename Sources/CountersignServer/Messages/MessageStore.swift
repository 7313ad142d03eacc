import Foundation

/// The storage the relay needs. Each backend's storage implements it; each method is atomic.
public protocol MessageStore: Sendable {
    /// In one transaction, for each request in order: checks that the sending device still has the
    /// signing key the signature was checked with, reads the active devices of its accounts (the
    /// recipients' and the sender's), compares their encryption key IDs with the envelope's, and when
    /// they are equal and the message ID is new, stores the message once and queues it for each device
    /// (incoming for recipients' devices, outgoing for the sender's). One outcome per request.
    func store(_ batch: [StoreRequest]) async throws -> [StoreOutcome]
    /// `store` for one request, through the backend's one group-commit queue: requests that arrive while
    /// a group is being written share the next group's transaction, each still with its own outcome
    /// (PostgreSQL: the send lane's `SendBatcher`; SQLite: the direct writer's group commit, shared with
    /// acknowledgements and sign-ins).
    func submit(_ request: StoreRequest) async throws -> StoreOutcome
    /// The device's due, unexpired entries after `after` and not in `excluding`, oldest first, at most
    /// `limit` entries and about `maxBytes` of envelopes; marks them fetched and counts first fetches as
    /// receipts. `more` is true when a limit cut the page short.
    /// With `recordFetch` false the read writes nothing (the push channel's; receipts then count at acknowledgement).
    func fetch(
        deviceID: String,
        after: Int64,
        excluding: [Int64],
        limit: Int,
        maxBytes: Int,
        now: Date,
        recordFetch: Bool
    ) async throws
        -> (entries: [QueueEntry], more: Bool)
    /// Deletes the device's entries with these positions; returns how many there were.
    func acknowledge(deviceID: String, seqs: [Int64]) async throws -> Int
    func cancel(messageID: String, senderAccountID: String, now: Date) async throws -> CancelOutcome
    func message(id: String) async throws -> MessageRecord?
    /// Every stored message, newest first (the "what the server sees" view).
    func allMessages(limit: Int) async throws -> [MessageRecord]
    /// The envelope bytes the account has stored (unexpired, not cancelled) and when the oldest expires.
    func storedBytes(senderAccountID: String, now: Date) async throws -> MessageQuota.Usage
    /// Deletes queue entries and messages past their expiry.
    func purgeExpiredMessages(now: Date) async throws
}
