import Foundation
import Testing

@testable import CountersignServer

/// The lockout rule as a state machine, without a database.
@Suite(.closesStorage) struct LockoutPolicyTests {
    let policy = LockoutPolicy()
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    /// A reserved check that failed.
    func fail(_ s: inout LoginGuard, now: Date) -> LockoutPolicy.Failure? {
        guard case .failed(let f) = policy.finish(&s, .failed, now: now) else { return nil }
        return f
    }

    func failOnce(_ s: inout LoginGuard, at now: Date) -> LockoutPolicy.Failure? {
        guard policy.reserve(&s, now: now) == .proceed else { return nil }
        return fail(&s, now: now)
    }

    @Test func thirdFailureDelaysFifthLocks() {
        var s = LoginGuard()
        #expect(failOnce(&s, at: t0) == .counted(failures: 1))
        #expect(failOnce(&s, at: t0) == .counted(failures: 2))
        #expect(failOnce(&s, at: t0) == .delayed(until: t0 + 1800, failures: 3))
        #expect(
            policy.reserve(&s, now: t0 + 1799) == .delayed(until: t0 + 1800),
            "refused without a check while delayed"
        )
        #expect(
            failOnce(&s, at: t0 + 1800) == .delayed(until: t0 + 3600, failures: 4),
            "after the delay a further failure delays again"
        )
        #expect(policy.reserve(&s, now: t0 + 3000) == .delayed(until: t0 + 3600))
        #expect(failOnce(&s, at: t0 + 3600) == .locked)
        #expect(policy.reserve(&s, now: t0 + 1_000_000) == .locked, "locked until an administrator unlocks")
    }

    /// Only the failure after which one more locks says so: the 4th of the default 5, whether it delayed
    /// or not (with `delayAfter` = `lockAfter` it is merely counted).
    @Test func oneMoreLocksIsTheNextToLastFailure() {
        var s = LoginGuard()
        var said: [Bool] = []
        var t = t0
        while let failure = failOnce(&s, at: t) {
            said.append(policy.oneMoreLocks(failure))
            if failure == .locked { break }
            t += policy.delay
        }
        #expect(said == [false, false, false, true, false])
        let even = LockoutPolicy(delayAfter: 3, delay: 10, lockAfter: 3)
        #expect(even.oneMoreLocks(.counted(failures: 2)) && !even.oneMoreLocks(.counted(failures: 1)))
    }

    @Test func successResets() {
        var s = LoginGuard()
        _ = failOnce(&s, at: t0)
        _ = failOnce(&s, at: t0)
        #expect(policy.reserve(&s, now: t0) == .proceed)
        #expect(policy.finish(&s, .passed, now: t0) == .succeeded(.proceed))
        #expect(s.failures == 0 && s.pending == 0 && s.delayedUntil == nil)
        #expect(failOnce(&s, at: t0) == .counted(failures: 1))
    }

    @Test func reservationsCapChecksInFlight() {
        var s = LoginGuard()
        #expect((0..<3).map { _ in policy.reserve(&s, now: t0) } == [.proceed, .proceed, .proceed])
        #expect(policy.reserve(&s, now: t0) == .busy, "a fourth check could not be counted before the delay")
        _ = fail(&s, now: t0)
        _ = fail(&s, now: t0)
        #expect(fail(&s, now: t0) == .delayed(until: t0 + 1800, failures: 3))
        // After the delay, one check at a time: each failure must delay or lock before the next.
        #expect(policy.reserve(&s, now: t0 + 1800) == .proceed)
        #expect(policy.reserve(&s, now: t0 + 1800) == .busy)
        // A reservation whose request never finished counts as a failure after the timeout: fail closed.
        #expect(policy.reserve(&s, now: t0 + 1800 + 61) == .delayed(until: t0 + 1861 + 1800))
        #expect(s.failures == 4 && s.pending == 0)
    }

    /// The in-flight budget lets only the last check in flight reach a delay, so a correct password can
    /// finish after a delay or lock only when the row was locked meanwhile or its reservation expired:
    /// both are refused.
    @Test func aSuccessFinishingAfterALockOrDelayIsRefused() {
        var s = LoginGuard(failures: 1)
        #expect(policy.reserve(&s, now: t0) == .proceed)
        #expect(policy.reserve(&s, now: t0) == .proceed)
        #expect(fail(&s, now: t0) == .counted(failures: 2))
        #expect(fail(&s, now: t0) == .delayed(until: t0 + 1800, failures: 3))
        var locked = LoginGuard(failures: 4, pending: 1, pendingExpiresAt: t0 + 60, locked: true)
        #expect(policy.finish(&locked, .passed, now: t0) == .succeeded(.locked))
        #expect(locked.failures == 4 && locked.locked)
        // A reservation that times out while its check is stuck becomes the 5th failure; the late success is refused.
        var slow = LoginGuard(failures: 4)
        _ = policy.reserve(&slow, now: t0)
        #expect(
            policy.finish(&slow, .passed, now: t0 + 61) == .succeeded(.locked),
            "the reservation expired into the 5th failure"
        )
    }

    @Test func releaseGivesBackWithoutCounting() {
        var s = LoginGuard()
        _ = policy.reserve(&s, now: t0)
        #expect(policy.release(&s, now: t0) == false, "not locked")
        #expect(s == LoginGuard(failures: 0, pending: 0, pendingExpiresAt: t0 + 60))
    }

    /// One short of the lock, a check that outlived its reservation is counted when it is given back:
    /// that locks, and `release` says so; so it does for a username already locked.
    @Test func releaseSaysWhenTheExpiredReservationLocked() {
        var s = LoginGuard()
        var t = t0
        while s.failures < policy.lockAfter - 1 {
            _ = failOnce(&s, at: t)
            t += policy.delay + 1
        }
        #expect(policy.reserve(&s, now: t) == .proceed)
        #expect(policy.release(&s, now: t + policy.reservationTimeout - 1) == false, "not yet expired")
        #expect(policy.reserve(&s, now: t) == .proceed)
        #expect(policy.release(&s, now: t + policy.reservationTimeout + 1) == true)
        #expect(s.locked && s.pending == 0 && s.failures == policy.lockAfter)
        #expect(policy.release(&s, now: t + policy.reservationTimeout + 2) == true, "still locked")
    }

    @Test func customNumbers() {
        let p = LockoutPolicy(delayAfter: 1, delay: 10, lockAfter: 2)
        var s = LoginGuard()
        _ = p.reserve(&s, now: t0)
        #expect(p.finish(&s, .failed, now: t0) == .failed(.delayed(until: t0 + 10, failures: 1)))
        #expect(p.reserve(&s, now: t0 + 10) == .proceed)
        #expect(p.finish(&s, .failed, now: t0 + 10) == .failed(.locked))
    }

    /// A password with a second factor still to come is not a success: failures counted before it (a
    /// guesser's wrong codes) stay, and only a complete sign-in resets them.
    @Test func aPasswordWithASecondFactorPendingResetsNothing() {
        var s = LoginGuard(failures: 2)
        #expect(policy.reserve(&s, now: t0) == .proceed)
        #expect(policy.finish(&s, .passedMoreToFollow, now: t0) == .succeeded(.proceed))
        #expect(s.failures == 2 && s.pending == 0)
        #expect(
            policy.countFailure(&s, now: t0) == .delayed(until: t0 + 1800, failures: 3),
            "a denied push counts without a reservation"
        )
        #expect(
            policy.countFailure(&s, now: t0 + 5) == .delayed(until: t0 + 1800, failures: 3) && s.failures == 3,
            "while delayed, more denials count nothing (no walk from the delay to the lock in seconds)"
        )
        #expect(
            policy.complete(&s, now: t0 + 60) == .delayed(until: t0 + 1800),
            "an approval during the delay is refused"
        )
        #expect(s.failures == 3)
        #expect(policy.complete(&s, now: t0 + 1800) == .proceed)
        #expect(s.failures == 0 && s.delayedUntil == nil)
        var locked = LoginGuard(failures: 5, locked: true)
        #expect(policy.complete(&locked, now: t0) == .locked && locked.failures == 5)
    }
}
