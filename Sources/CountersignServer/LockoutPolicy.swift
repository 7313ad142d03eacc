import Foundation

/// Consecutive failed password checks per username (docs/SERVER.md, "Lockout"): the `delayAfter`-th
/// failure delays sign-in for `delay`; after the delay each further failure delays again, and the
/// `lockAfter`-th locks until an administrator unlocks. A success resets the count.
///
/// A pure state machine: the store loads a `LoginGuard`, calls `reserve` before a password check and
/// `finish` after it, and saves the result, each inside one transaction. Reserving counts checks in
/// flight, so concurrent requests cannot run more checks than failures are left before the delay.
public struct LockoutPolicy: Sendable, Equatable {
    public var delayAfter: Int
    public var delay: TimeInterval
    public var lockAfter: Int
    /// A reservation whose request never finished (a crashed node) stops counting after this long.
    public var reservationTimeout: TimeInterval

    public init(delayAfter: Int = 3, delay: TimeInterval = 30 * 60, lockAfter: Int = 5, reservationTimeout: TimeInterval = 60) {
        precondition(delayAfter >= 1 && lockAfter >= delayAfter && delay >= 0)
        self.delayAfter = delayAfter; self.delay = delay; self.lockAfter = lockAfter; self.reservationTimeout = reservationTimeout
    }

    /// What may happen next for a username.
    public enum Gate: Equatable, Sendable {
        /// Check the password.
        case proceed
        /// Refused without a check until `until`.
        case delayed(until: Date)
        /// Refused until an administrator unlocks.
        case locked
        /// As many checks are already running as failures are left before the delay; retry shortly.
        case busy
    }

    /// What a failed check led to.
    public enum Failure: Equatable, Sendable {
        case counted(failures: Int)
        case delayed(until: Date)
        case locked
    }

    public func reserve(_ state: inout LoginGuard, now: Date) -> Gate {
        if state.locked { return .locked }
        if let until = state.delayedUntil, until > now { return .delayed(until: until) }
        let pending = state.livePending(now: now)
        let threshold = state.failures < delayAfter ? delayAfter : state.failures + 1
        guard state.failures + pending < min(threshold, lockAfter) else { return .busy }
        state.pending = pending + 1
        state.pendingExpiresAt = now.addingTimeInterval(reservationTimeout)
        return .proceed
    }

    public func succeed(_ state: inout LoginGuard, now: Date) {
        state.pending = max(0, state.livePending(now: now) - 1)
        state.failures = 0
        state.delayedUntil = nil
    }

    public func fail(_ state: inout LoginGuard, now: Date) -> Failure {
        state.pending = max(0, state.livePending(now: now) - 1)
        state.failures += 1
        if state.failures >= lockAfter {
            state.locked = true
            return .locked
        }
        if state.failures >= delayAfter {
            let until = now.addingTimeInterval(delay)
            state.delayedUntil = until
            return .delayed(until: until)
        }
        return .counted(failures: state.failures)
    }
}

/// The stored lockout state of one username (whether or not an account has it, so that unknown names
/// answer exactly like real ones).
public struct LoginGuard: Equatable, Sendable {
    public var failures = 0
    public var pending = 0
    public var pendingExpiresAt: Date?
    public var delayedUntil: Date?
    public var locked = false

    public init(failures: Int = 0, pending: Int = 0, pendingExpiresAt: Date? = nil, delayedUntil: Date? = nil, locked: Bool = false) {
        self.failures = failures; self.pending = pending; self.pendingExpiresAt = pendingExpiresAt
        self.delayedUntil = delayedUntil; self.locked = locked
    }

    func livePending(now: Date) -> Int {
        guard let expires = pendingExpiresAt, expires > now else { return 0 }
        return pending
    }
}
