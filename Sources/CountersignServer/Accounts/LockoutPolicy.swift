import Foundation

/// Consecutive failed checks per username (docs/DESIGN.md, "Lockout"): wrong passwords, wrong passcodes
/// and recovery codes, denied or wrong-number pushes, across sign-ins and re-authentications. The
/// `delayAfter`-th failure delays sign-in for `delay`; after the delay each further failure delays
/// again, and the `lockAfter`-th locks until an administrator unlocks. Only a complete sign-in (the
/// password, and the second factor when the account has one) resets the count.
///
/// A pure state machine: the store loads a `LoginGuard`, calls `reserve` before a check and `finish`
/// after it, and saves the result, each inside one transaction. Reserving counts checks in flight, so
/// concurrent requests cannot run more checks than failures are left before the delay: the check and
/// its count are one compare-and-set.
public struct LockoutPolicy: Sendable, Equatable {
    public var delayAfter: Int
    public var delay: TimeInterval
    public var lockAfter: Int
    /// A reservation whose request has not finished after this long (a crashed node, a stalled check)
    /// is counted as a failure: the rule fails closed, never open.
    public var reservationTimeout: TimeInterval

    public init(
        delayAfter: Int = 3,
        delay: TimeInterval = 30 * 60,
        lockAfter: Int = 5,
        reservationTimeout: TimeInterval = 60
    ) {
        precondition(delayAfter >= 1 && lockAfter >= delayAfter && delay >= 0)
        self.delayAfter = delayAfter
        self.delay = delay
        self.lockAfter = lockAfter
        self.reservationTimeout = reservationTimeout
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

    /// What a failed check led to. `failures` is the count after it.
    public enum Failure: Equatable, Sendable {
        case counted(failures: Int)
        case delayed(until: Date, failures: Int)
        case locked
    }

    /// Whether the failure that came to `failure` leaves exactly one more before the lock: the one
    /// refusal that says so (a user who knows stops and asks; a guesser learns nothing the rule hides).
    public func oneMoreLocks(_ failure: Failure) -> Bool {
        switch failure {
        case .counted(let failures), .delayed(_, let failures): failures == lockAfter - 1
        case .locked: false
        }
    }

    public func reserve(_ state: inout LoginGuard, now: Date) -> Gate {
        expireReservations(&state, now: now)
        if let refusal = refusal(state, now: now) { return refusal }
        let threshold = state.failures < delayAfter ? delayAfter : state.failures + 1
        guard state.failures + state.pending < min(threshold, lockAfter) else { return .busy }
        state.pending += 1
        state.pendingExpiresAt = now.addingTimeInterval(reservationTimeout)
        return .proceed
    }

    /// How a reserved check ended.
    public enum Check: Equatable, Sendable {
        /// The last factor passed: the sign-in is complete and the count resets.
        case passed
        /// A factor passed but another must follow (a password on an account with a second factor, a
        /// code whose transaction is still to be collected): not a failure, and not yet a success.
        case passedMoreToFollow
        case failed
    }

    /// Applies the end of a reserved check. A pass is refused (and resets nothing) when the username was
    /// locked or delayed while the check ran, by a concurrent failure or an expired reservation.
    public func finish(_ state: inout LoginGuard, _ check: Check, now: Date) -> SignInOutcome {
        expireReservations(&state, now: now)
        state.pending = max(0, state.pending - 1)
        switch check {
        case .failed: return .failed(count(failures: 1, &state, now: now))
        case .passedMoreToFollow: return .succeeded(refusal(state, now: now) ?? .proceed)
        case .passed: return .succeeded(complete(&state, now: now))
        }
    }

    /// A sign-in whose factors all passed, with no reservation of its own (a push approval, a collected
    /// transaction): resets the count unless the username is locked or delayed.
    public func complete(_ state: inout LoginGuard, now: Date) -> Gate {
        expireReservations(&state, now: now)
        if let refusal = refusal(state, now: now) { return refusal }
        state.failures = 0
        state.delayedUntil = nil
        return .proceed
    }

    /// A failure that needed no check of ours (an authenticator denied, or picked the wrong number).
    /// While delayed or locked nothing more is counted: the pushes of transactions opened before the delay
    /// must not walk the account from the first delay to the lock in seconds.
    public func countFailure(_ state: inout LoginGuard, now: Date) -> Failure {
        expireReservations(&state, now: now)
        if state.locked { return .locked }
        if let until = state.delayedUntil, until > now { return .delayed(until: until, failures: state.failures) }
        return count(failures: 1, &state, now: now)
    }

    /// Gives back a reservation whose check never ran (the server was too busy to hash). True when the
    /// username is locked after it: expired reservations, counted first, may have locked it.
    @discardableResult
    public func release(_ state: inout LoginGuard, now: Date) -> Bool {
        expireReservations(&state, now: now)
        state.pending = max(0, state.pending - 1)
        return state.locked
    }

    /// A sign-in that checked nothing here (a QR sign-in's approval): refused while locked or delayed,
    /// counting expired reservations as failures first, as every other step does; resets nothing.
    public func gate(_ state: inout LoginGuard, now: Date) -> Gate {
        expireReservations(&state, now: now)
        return refusal(state, now: now) ?? .proceed
    }

    /// Why the state refuses any check now, nil when it does not.
    func refusal(_ state: LoginGuard, now: Date) -> Gate? {
        if state.locked { return .locked }
        if let until = state.delayedUntil, until > now { return .delayed(until: until) }
        return nil
    }

    private func count(failures n: Int, _ state: inout LoginGuard, now: Date) -> Failure {
        state.failures += n
        if state.failures >= lockAfter {
            state.locked = true
            return .locked
        }
        if state.failures >= delayAfter {
            let until = now.addingTimeInterval(delay)
            state.delayedUntil = max(until, state.delayedUntil ?? until)
            return .delayed(until: state.delayedUntil!, failures: state.failures)
        }
        return .counted(failures: state.failures)
    }

    /// Reservations past their timeout become failures. A check that does finish later still counts
    /// its own outcome (a late failure counts twice, which errs on the side of the account).
    private func expireReservations(_ state: inout LoginGuard, now: Date) {
        guard state.pending > 0, let expires = state.pendingExpiresAt, expires <= now else { return }
        let stale = state.pending
        state.pending = 0
        state.pendingExpiresAt = nil
        _ = count(failures: stale, &state, now: now)
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

    public init(
        failures: Int = 0,
        pending: Int = 0,
        pendingExpiresAt: Date? = nil,
        delayedUntil: Date? = nil,
        locked: Bool = false
    ) {
        self.failures = failures
        self.pending = pending
        self.pendingExpiresAt = pendingExpiresAt
        self.delayedUntil = delayedUntil
        self.locked = locked
    }

    /// Whether a change from `before` (nil: no row yet) to `after` locks the username. Every lock, by a
    /// counted failure or by expired reservations counted on any later step, ends the account's sessions
    /// in the transaction that stores it: a guesser holding a stolen token must not keep it.
    public static func locks(from before: LoginGuard?, to after: LoginGuard) -> Bool {
        after.locked && !(before?.locked ?? false)
    }
}
