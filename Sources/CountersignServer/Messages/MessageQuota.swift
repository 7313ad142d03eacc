import Foundation
import Synchronization

/// How many envelope bytes each account has stored (sent, unexpired, not cancelled), against its quota.
/// The sum is read from the database once a minute per sending account and kept up to date here between
/// reads, so a send costs no extra statement; several nodes each add their own sends until the next read
/// reconciles them, so an account may overshoot by what it sends within a minute on the other nodes (the
/// per-account send rate bounds that).
public final class MessageQuota: Sendable {
    /// What the store knows of an account's stored messages.
    public struct Usage: Sendable, Equatable {
        public var bytes: Int64
        /// When the oldest of them expires (nil: none stored).
        public var oldestExpiry: Date?
        public init(bytes: Int64, oldestExpiry: Date?) { self.bytes = bytes; self.oldestExpiry = oldestExpiry }
    }

    private struct Entry { var usage: Usage; var readAt: Date }
    let limitBytes: Int64
    static let refresh: TimeInterval = 60
    private let entries = Mutex<[String: Entry]>([:])

    init(limitBytes: Int64) { self.limitBytes = limitBytes }

    /// Counts `size` more bytes for the account, or throws `quotaExceeded` and counts nothing. `read`
    /// gives the stored usage when the figure here is missing or a minute old.
    func admit(accountID: String, size: Int64, now: Date, read: () async throws -> Usage) async throws {
        guard limitBytes > 0 else { return }
        let fresh = entries.withLock { e -> Bool in
            guard let entry = e[accountID] else { return false }
            return now.timeIntervalSince(entry.readAt) < Self.refresh
        }
        if !fresh {
            let usage = try await read()
            entries.withLock { e in
                // Bounded memory: accounts that have not sent for a minute are read again anyway.
                if e.count > 100_000 { e = e.filter { now.timeIntervalSince($0.value.readAt) < Self.refresh } }
                e[accountID] = Entry(usage: usage, readAt: now)
            }
        }
        try entries.withLock { e in
            guard var entry = e[accountID] else { return }
            guard entry.usage.bytes + size <= limitBytes else {
                let wait = entry.usage.oldestExpiry.map { max(60, $0.timeIntervalSince(now)) } ?? Self.refresh
                throw RelayError.quotaExceeded(limitBytes: limitBytes, retryAfter: wait)
            }
            entry.usage.bytes += size
            e[accountID] = entry
        }
    }

    /// Gives back bytes counted for a send that was not stored (refused, or a duplicate).
    func release(accountID: String, size: Int64) {
        guard limitBytes > 0 else { return }
        entries.withLock { e in e[accountID]?.usage.bytes -= size }
    }

    /// Forgets the figure of an account (a cancelled message freed its bytes): the next send reads it.
    func forget(accountID: String) {
        _ = entries.withLock { $0.removeValue(forKey: accountID) }
    }
}
