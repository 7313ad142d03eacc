import Foundation
import Testing
@testable import CountersignServer

/// The lockout rule as a state machine, without a database.
@Suite struct LockoutPolicyTests {
    let policy = LockoutPolicy()
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func failOnce(_ s: inout LoginGuard, at now: Date) -> LockoutPolicy.Failure? {
        guard policy.reserve(&s, now: now) == .proceed else { return nil }
        return policy.fail(&s, now: now)
    }

    @Test func thirdFailureDelaysFifthLocks() {
        var s = LoginGuard()
        #expect(failOnce(&s, at: t0) == .counted(failures: 1))
        #expect(failOnce(&s, at: t0) == .counted(failures: 2))
        #expect(failOnce(&s, at: t0) == .delayed(until: t0 + 1800))
        #expect(policy.reserve(&s, now: t0 + 1799) == .delayed(until: t0 + 1800), "refused without a check while delayed")
        #expect(failOnce(&s, at: t0 + 1800) == .delayed(until: t0 + 3600), "after the delay a further failure delays again")
        #expect(policy.reserve(&s, now: t0 + 3000) == .delayed(until: t0 + 3600))
        #expect(failOnce(&s, at: t0 + 3600) == .locked)
        #expect(policy.reserve(&s, now: t0 + 1_000_000) == .locked, "locked until an administrator unlocks")
    }

    @Test func successResets() {
        var s = LoginGuard()
        _ = failOnce(&s, at: t0)
        _ = failOnce(&s, at: t0)
        #expect(policy.reserve(&s, now: t0) == .proceed)
        policy.succeed(&s, now: t0)
        #expect(s.failures == 0 && s.pending == 0 && s.delayedUntil == nil)
        #expect(failOnce(&s, at: t0) == .counted(failures: 1))
    }

    @Test func reservationsCapChecksInFlight() {
        var s = LoginGuard()
        #expect((0..<3).map { _ in policy.reserve(&s, now: t0) } == [.proceed, .proceed, .proceed])
        #expect(policy.reserve(&s, now: t0) == .busy, "a fourth check could not be counted before the delay")
        _ = policy.fail(&s, now: t0); _ = policy.fail(&s, now: t0)
        #expect(policy.fail(&s, now: t0) == .delayed(until: t0 + 1800))
        // After the delay, one check at a time: each failure must delay or lock before the next.
        #expect(policy.reserve(&s, now: t0 + 1800) == .proceed)
        #expect(policy.reserve(&s, now: t0 + 1800) == .busy)
        // A reservation whose request died stops counting after the timeout.
        #expect(policy.reserve(&s, now: t0 + 1800 + 61) == .proceed)
    }

    @Test func customNumbers() {
        let p = LockoutPolicy(delayAfter: 1, delay: 10, lockAfter: 2)
        var s = LoginGuard()
        _ = p.reserve(&s, now: t0)
        #expect(p.fail(&s, now: t0) == .delayed(until: t0 + 10))
        #expect(p.reserve(&s, now: t0 + 10) == .proceed)
        #expect(p.fail(&s, now: t0 + 10) == .locked)
    }
}
