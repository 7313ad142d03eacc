import Foundation
import Synchronization

/// Token buckets per client address: `capacity` events, refilled evenly over `window`. Kept in memory on
/// each node (like a proxy's rate limit); several nodes each allow their own budget.
public final class AddressThrottle: Sendable {
    public struct Limit: Sendable, Equatable {
        public var capacity: Int
        public var window: TimeInterval
        public init(capacity: Int, window: TimeInterval) { self.capacity = capacity; self.window = window }
        public static let unlimited = Limit(capacity: Int.max / 2, window: 1)
    }

    private struct Bucket { var tokens: Double; var at: Date }
    private let limit: Limit
    private let buckets = Mutex<[String: Bucket]>([:])

    public init(_ limit: Limit) { self.limit = limit }

    private func refill(_ b: Bucket?, now: Date) -> Bucket {
        guard let b else { return Bucket(tokens: Double(limit.capacity), at: now) }
        let rate = Double(limit.capacity) / limit.window
        return Bucket(tokens: min(Double(limit.capacity), b.tokens + max(0, now.timeIntervalSince(b.at)) * rate), at: now)
    }

    /// Seconds until one event is allowed again, or nil when one is allowed now.
    public func retryAfter(_ address: String, now: Date) -> TimeInterval? {
        buckets.withLock { all in
            let b = refill(all[address], now: now)
            guard b.tokens < 1 else { return nil }
            return (1 - b.tokens) * limit.window / Double(limit.capacity)
        }
    }

    /// True when the address used any of its budget recently (the `risk` captcha policy asks then).
    public func hasRecentEvents(_ address: String, now: Date) -> Bool {
        buckets.withLock { all in refill(all[address], now: now).tokens < Double(limit.capacity) }
    }

    public func consume(_ address: String, now: Date) {
        buckets.withLock { all in
            var b = refill(all[address], now: now)
            b.tokens = max(0, b.tokens - 1)
            all[address] = b
            if all.count > 100_000 { all = all.filter { refill($0.value, now: now).tokens < Double(limit.capacity) } }
        }
    }
}
