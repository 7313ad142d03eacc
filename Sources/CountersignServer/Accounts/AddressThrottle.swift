import CountersignCrypto
import Foundation
import Synchronization

/// Token buckets per client address: `capacity` events, refilled evenly over `window`. A token is taken
/// before the work it pays for (so concurrent requests cannot all pass a check first) and may be
/// refunded. Kept in memory on each node, like a proxy's rate limit. IPv6 addresses are keyed by their
/// /64, the block one subscriber controls.
public final class AddressThrottle: Sendable {
    public struct Limit: Sendable, Equatable {
        public var capacity: Int
        public var window: TimeInterval
        public init(capacity: Int, window: TimeInterval) {
            self.capacity = capacity
            self.window = window
        }
    }

    private struct Bucket {
        var tokens: Double
        var at: Date
    }
    private struct State {
        var buckets: [String: Bucket] = [:]
        var lastSweep = Date.distantPast
    }
    private let limit: Limit
    private let state = Mutex(State())
    static let maxBuckets = 100_000

    public init(_ limit: Limit) { self.limit = limit }

    private func refill(_ b: Bucket?, now: Date) -> Bucket {
        guard let b else { return Bucket(tokens: Double(limit.capacity), at: now) }
        let rate = Double(limit.capacity) / limit.window
        return Bucket(
            tokens: min(Double(limit.capacity), b.tokens + max(0, now.timeIntervalSince(b.at)) * rate),
            at: now
        )
    }

    /// Takes one token: nil when taken, else the seconds until one is available.
    public func take(_ address: String, now: Date) -> TimeInterval? {
        let key = Self.key(address)
        return state.withLock { s in
            var b = refill(s.buckets[key], now: now)
            guard b.tokens >= 1 else { return (1 - b.tokens) * limit.window / Double(limit.capacity) }
            b.tokens -= 1
            s.buckets[key] = b
            sweep(&s, now: now)
            return nil
        }
    }

    public func refund(_ address: String, now: Date) {
        let key = Self.key(address)
        state.withLock { s in
            guard var b = s.buckets[key] else { return }
            b = refill(b, now: now)
            b.tokens = min(Double(limit.capacity), b.tokens + 1)
            s.buckets[key] = b
        }
    }

    /// Drops full buckets when there are too many, at most once every 10 seconds, so the cost of a sweep
    /// is spread over many requests instead of paid by each.
    private func sweep(_ s: inout State, now: Date) {
        guard s.buckets.count > Self.maxBuckets, now.timeIntervalSince(s.lastSweep) > 10 else { return }
        s.lastSweep = now
        s.buckets = s.buckets.filter { refill($0.value, now: now).tokens < Double(limit.capacity) }
    }

    /// An IPv4 address (including an IPv4-mapped IPv6 one) as is; an IPv6 address as its first 64 bits.
    static func key(_ raw: String) -> String {
        let address = ClientAddress.normalize(raw)
        guard address.contains(":") else { return address }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, address, &v6) == 1 else { return address }
        return Hex.encode(withUnsafeBytes(of: &v6) { Array($0.prefix(8)) }) + "::/64"
    }
}
