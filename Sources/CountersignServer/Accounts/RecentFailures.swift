import Foundation
import Synchronization

/// Which client addresses and usernames had a failed sign-in within `window`: the `risk` captcha policy
/// asks for a captcha from them. A failure is remembered for the whole window from its last occurrence
/// (not read off a throttle bucket's refill, which forgets within seconds), so a sprayer pacing itself
/// under the rate limit still meets the captcha. Kept in memory on each node, like the throttles.
final class RecentFailures: Sendable {
    let window: TimeInterval
    private struct State {
        var last: [String: Date] = [:]
        var lastSweep = Date.distantPast
    }
    private let state = Mutex(State())
    static let maxEntries = 200_000

    init(window: TimeInterval) { self.window = window }

    func record(address: String, username: String?, now: Date) {
        state.withLock { s in
            s.last[Self.addressKey(address)] = now
            if let username, !username.isEmpty { s.last["user " + username] = now }
            sweep(&s, now: now)
        }
    }

    func contains(address: String, username: String?, now: Date) -> Bool {
        state.withLock { s in
            func recent(_ key: String) -> Bool { s.last[key].map { now.timeIntervalSince($0) < window } ?? false }
            return recent(Self.addressKey(address)) || (username.map { !$0.isEmpty && recent("user " + $0) } ?? false)
        }
    }

    /// Past `maxEntries`, forgets what is older than the window, at most once a minute. If every entry
    /// is still recent the table keeps growing: forgetting a recent failure would let a sprayer skip
    /// the captcha, and 200,000 entries are a few tens of MiB.
    private func sweep(_ s: inout State, now: Date) {
        guard s.last.count > Self.maxEntries, now.timeIntervalSince(s.lastSweep) > 60 else { return }
        s.lastSweep = now
        s.last = s.last.filter { now.timeIntervalSince($0.value) < window }
    }

    /// Addresses share the throttle's key: IPv4 as is, IPv6 by /64.
    private static func addressKey(_ address: String) -> String { "addr " + AddressThrottle.key(address) }
}
