import Foundation
import Hummingbird

/// A long poll of a sign-in's state (docs/PROTOCOL.md §3.3, §3.9): answers as soon as the state differs from
/// the one first seen or is final, or after `wait` seconds. Woken by the hub's signal for `key` (from
/// whichever node changed it), registered before each read so that a change between the read and the wait
/// is not missed; an expiry has no signal, so no wait outlasts the state, and a lost NOTIFY costs at most
/// 5 seconds.
/// The `wait` query parameter of every long poll (messages, a sign-in's second factor, a QR code): 0
/// (answer at once) to 30 seconds, below the idle timeouts of common proxies.
enum WaitParameter {
    static let max = 30

    static func seconds(_ request: Request) throws -> Int {
        guard let w = request.uri.queryParameters["wait"] else { return 0 }
        guard let n = Int(String(w)), (0...max).contains(n) else {
            throw Problem.malformed("wait must be 0 to \(max) seconds")
        }
        return n
    }
}

struct LongPoll<State: Sendable> {
    let hub: PushHub
    let key: String
    /// True when `current` answers the poll: changed from `first`, or final.
    let answers: @Sendable (_ first: State, _ current: State) -> Bool
    let expiresAt: @Sendable (State) -> Date
    /// The service's clock, which `expiresAt` is on.
    let now: @Sendable () -> Date
    let read: @Sendable () async throws -> State

    /// Long polls that may wait on one key at once; more answer at once. A sign-in has one waiting screen
    /// (a second tab, a reload): the cap keeps one anonymous binding from holding thousands of tasks.
    static var maxWaitersPerKey: Int { 4 }

    /// `first` was read before; waits at most `wait` seconds for an answering state.
    func run(first: State, wait: Int) async throws -> State {
        guard hub.waiters(on: key) < Self.maxWaitersPerKey else { return first }
        var current = first
        let deadline = ContinuousClock.now + .seconds(wait)
        while true {
            let left = deadline - ContinuousClock.now
            if answers(first, current) || left <= .zero || hub.isClosed { return current }
            let waiter = hub.register(key)
            do { current = try await read() } catch {
                hub.cancel(waiter)
                throw error
            }
            if answers(first, current) {
                hub.cancel(waiter)
                return current
            }
            let untilExpiry = expiresAt(current).timeIntervalSince(now()) + 0.05
            await hub.wait(
                waiter,
                seconds: min(
                    Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18,
                    max(0.05, untilExpiry),
                    5
                )
            )
        }
    }
}
