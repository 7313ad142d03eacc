import Foundation
import Synchronization
import Testing

@testable import CountersignServer

/// A database that does not answer in time is an overload to retry, not a fault of the request: the
/// client gets the documented 503 `server-busy` problem with `Retry-After`, never a 500.
@Suite(.closesStorage) struct DatabaseUnavailableTests {
    @Test(arguments: [
        PostgresLane.DeadlineExceeded(seconds: 10) as any Error & Sendable, PostgresLane.Closed(),
    ])
    func aLaneThatGaveUpIsA503ServerBusy(_ failure: any Error & Sendable) async throws {
        // The store throws `failure` once, inside the sign-in's last write, when armed.
        let armed = Mutex(false)
        let h = try await Harness.make(
            .sqlite,
            wrapStore: { base in
                HookedStore(base: base) { _ in
                    let fire = armed.withLock { armed in
                        defer { armed = false }
                        return armed
                    }
                    if fire { throw failure }
                }
            }
        )
        try await h.run { api in
            #expect(try await api.register("lane").status == 201)
            armed.withLock { $0 = true }
            let r = try await api.signIn("lane")
            #expect(r.status == 503 && r.code == "server-busy" && r.isProblem, "\(r.status) \(r.json)")
            #expect(r.headers[.retryAfter] == "1")
            #expect(try await api.signIn("lane").status == 201, "the next request is served")
        }
    }
}
