import Foundation
import Synchronization
import Testing

@testable import CountersignServer

/// A reserved check whose outcome the database cannot take (busy under load) answers 503 and gives its
/// reservation back, as for a check that never ran: left pending, it would hold the account's next
/// attempts as in flight (429 sign-in-busy) until the reservation expired.
@Suite(.closesStorage) struct UnstoredCheckTests {
    /// Set, the next `finishSignIn` throws as a database too busy to take it would (503 server-busy).
    final class FailNext: Sendable {
        private let armed = Mutex(false)
        func arm() { armed.withLock { $0 = true } }
        func take() -> Bool {
            armed.withLock {
                let v = $0
                $0 = false
                return v
            }
        }
    }

    static func harness(_ backend: Backend, failNext: FailNext) async throws -> Harness {
        try await Harness.make(
            backend,
            wrapStore: { base in
                HookedStore(base: base) { _ in
                    if failNext.take() { throw RequestError.serverBusy }
                }
            }
        )
    }

    @Test(arguments: Backend.available)
    func aPasswordCheckWhoseOutcomeCannotBeStoredGivesItsReservationBack(_ backend: Backend) async throws {
        let failNext = FailNext()
        let h = try await Self.harness(backend, failNext: failNext)
        try await h.run { api in
            try await api.register("quinn")
            // Two failures: one is left before the delay, so one reservation held is all the account has.
            for _ in 0..<2 { #expect(try await api.signIn("quinn", "wrong horse").status == 401) }
            failNext.arm()
            let unstored = try await api.signIn("quinn", "wrong horse")
            #expect(unstored.status == 503 && unstored.code == "server-busy", "\(unstored.status) \(unstored.json)")
            let g = try #require(try await h.store.loginGuard(username: "quinn"))
            #expect(g.pending == 0 && g.failures == 2, "nothing pending, nothing counted: \(g)")
            let next = try await api.signIn("quinn")
            #expect(next.status == 201, "evaluated normally, not held as busy: \(next.status) \(next.json)")
        }
    }

    @Test(arguments: Backend.available)
    func aSecondFactorCheckWhoseOutcomeCannotBeStoredGivesItsReservationBack(_ backend: Backend) async throws {
        let failNext = FailNext()
        let h = try await Self.harness(backend, failNext: failNext)
        try await h.run { api in
            let (_, secret) = try await SecondFactorGuessingTests.accountWithTOTP(api, h, "rosa")
            let tx = try await SecondFactorGuessingTests.pending(api, "rosa")
            let wrong = try SecondFactorGuessingTests.wrongCode(secret, h)
            for _ in 0..<2 {
                #expect(
                    try await SecondFactorGuessingTests.otp(api, tx, wrong).json["status"] as? String == "OTP_REQUIRED"
                )
            }
            failNext.arm()
            let unstored = try await SecondFactorGuessingTests.otp(api, tx, wrong)
            #expect(unstored.status == 503 && unstored.code == "server-busy", "\(unstored.status) \(unstored.json)")
            let g = try #require(try await h.store.loginGuard(username: "rosa"))
            #expect(g.pending == 0 && g.failures == 2, "nothing pending, nothing counted: \(g)")
            let right = try await SecondFactorGuessingTests.otp(api, tx, try MFAReauthTests.code(secret, h))
            #expect(right.json["status"] as? String == "COMPLETED", "evaluated normally: \(right.status) \(right.json)")
        }
    }
}
