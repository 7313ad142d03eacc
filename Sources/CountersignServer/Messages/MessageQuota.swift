import Foundation
import Synchronization

/// How many envelope bytes each account has stored (sent, unexpired, not cancelled), against its quota.
/// The sum is read from the database once a minute per sending account and kept up to date here between
/// reads, so a send costs no extra statement. Sends admitted but not yet answered (`inFlight`) are kept
/// apart, so that a read that began before they were stored does not lose them. With several nodes,
/// each adds its own sends until its next read, so an account may overshoot by what it sends through the
/// other nodes within a minute (each node applies the send rate on its own).
public final class MessageQuota: Sendable {
    /// What the store knows of an account's stored messages.
    public struct Usage: Sendable, Equatable {
        public var bytes: Int64
        /// When the oldest of them expires (nil: none stored).
        public var oldestExpiry: Date?
        public init(bytes: Int64, oldestExpiry: Date?) {
            self.bytes = bytes
            self.oldestExpiry = oldestExpiry
        }
    }

    private struct Entry {
        /// The database's figure at `readAt`, plus what was stored here since.
        var stored: Usage?
        var readAt: Date?
        /// Admitted, not yet stored or refused.
        var inFlight: Int64 = 0
    }

    let limitBytes: Int64
    static let refresh: TimeInterval = 60
    private let entries = Mutex<[String: Entry]>([:])

    init(limitBytes: Int64) { self.limitBytes = limitBytes }

    /// Counts `size` more bytes for the account, or throws `quotaExceeded` and counts nothing. `read`
    /// gives the stored usage when the figure here is missing or a minute old. Every admitted send must
    /// be followed by `finish`.
    func admit(accountID: String, size: Int64, now: Date, read: () async throws -> Usage) async throws {
        guard limitBytes > 0 else { return }
        let fresh = entries.withLock { e -> Bool in
            guard let at = e[accountID]?.readAt else { return false }
            return now.timeIntervalSince(at) < Self.refresh
        }
        if !fresh {
            let usage = try await read()
            entries.withLock { e in
                // Bounded memory: accounts with nothing in flight that have not sent for a minute are read
                // again anyway.
                if e.count > 100_000 {
                    e = e.filter {
                        $0.value.inFlight > 0
                            || $0.value.readAt.map { now.timeIntervalSince($0) < Self.refresh } ?? false
                    }
                }
                e[accountID, default: Entry()].stored = usage
                e[accountID]!.readAt = now
            }
        }
        try entries.withLock { e in
            var entry = e[accountID, default: Entry()]
            let stored = entry.stored ?? Usage(bytes: 0, oldestExpiry: nil)
            guard stored.bytes + entry.inFlight + size <= limitBytes else {
                let wait = stored.oldestExpiry.map { max(60, $0.timeIntervalSince(now)) } ?? Self.refresh
                throw RelayError.quotaExceeded(limitBytes: limitBytes, retryAfter: wait)
            }
            entry.inFlight += size
            e[accountID] = entry
        }
    }

    /// The end of an admitted send: its bytes are stored (counted until the next read includes them) or
    /// not (refused, a duplicate, failed).
    func finish(accountID: String, size: Int64, stored: Bool) {
        guard limitBytes > 0 else { return }
        entries.withLock { e in
            guard var entry = e[accountID] else { return }
            entry.inFlight = max(0, entry.inFlight - size)
            if stored { entry.stored?.bytes += size }
            e[accountID] = entry
        }
    }

    /// A cancelled message freed its bytes: the next send reads the figure again.
    func forget(accountID: String) {
        entries.withLock { e in e[accountID]?.readAt = nil }
    }
}
