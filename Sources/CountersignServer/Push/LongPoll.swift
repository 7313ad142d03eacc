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

/// Every long poll (messages, a sign-in's second factor, a QR code): answers as soon as a read satisfies
/// it, or after `wait` seconds. Woken by the hub's signals for `keys` (from whichever node changed the
/// state), registered before each read so that a change between the read and the wait is not missed.
struct LongPoll<State: Sendable> {
    /// When a state ends by itself, which sends no signal: no wait outlasts it, and a lost NOTIFY costs at
    /// most 5 seconds. `now` is the service's clock, which `at` is on.
    struct Expiry: Sendable {
        let at: @Sendable (State) -> Date
        let now: @Sendable () -> Date
    }

    let hub: PushHub
    let keys: [String]
    /// Long polls that may wait on `keys[0]` at once; more answer at once (nil: no cap). A sign-in has one
    /// waiting screen (a second tab, a reload): the cap keeps one anonymous binding from holding thousands
    /// of tasks.
    var maxWaiters: Int? = nil
    var expiry: Expiry? = nil
    let read: @Sendable () async throws -> State

    /// The cap of a sign-in's polls (a transaction, a QR code).
    static var maxWaitersPerKey: Int { 4 }

    /// Waits at most `wait` seconds for a state that `answers`. `first`, a state read before, answers at
    /// once when it already does, when no wait is asked for, or when the cap is reached.
    func run(first: State? = nil, wait: Int, until answers: @Sendable (State) -> Bool) async throws -> State {
        if let first {
            let capped = maxWaiters.map { hub.waiters(on: keys[0]) >= $0 } ?? false
            if answers(first) || wait <= 0 || capped || hub.isClosed { return first }
        }
        let deadline = ContinuousClock.now + .seconds(wait)
        while true {
            let waiter = hub.register(keys: keys)
            let current: State
            do { current = try await read() } catch {
                hub.cancel(waiter)
                throw error
            }
            let left = deadline - ContinuousClock.now
            if answers(current) || left <= .zero || hub.isClosed {
                hub.cancel(waiter)
                return current
            }
            var seconds = Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
            if let expiry {
                seconds = min(seconds, max(0.05, expiry.at(current).timeIntervalSince(expiry.now()) + 0.05), 5)
            }
            await hub.wait(waiter, seconds: seconds)
        }
    }
}
