import Foundation
import Hummingbird
import SQLKit
import Testing

@testable import CountersignServer

/// `/metrics` labels each request with the status the client received, problems included, and times it.
@Suite(.closesStorage) struct MetricsTests {
    /// The `hb_requests` and duration-histogram lines for one route, method and status.
    static func lines(_ text: String, route: String, method: String, status: Int) -> (count: Double, timed: Bool) {
        var count = 0.0
        var timed = false
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard line.contains("http_route=\"\(route)\""), line.contains("http_request_method=\"\(method)\""),
                line.contains("http_response_status_code=\"\(status)\"")
            else { continue }
            if line.hasPrefix("hb_requests") { count += Double(line.split(separator: " ").last ?? "") ?? 0 }
            if line.hasPrefix("http_server_request_duration_count") {
                timed = (Double(line.split(separator: " ").last ?? "") ?? 0) > 0
            }
        }
        return (count, timed)
    }

    @Test func problemStatusesAreCountedAndTimedAsSent() async throws {
        let h = try await Harness.make(.sqlite) {
            $0.signInFailuresPerAddress = .init(capacity: 2, window: 600)
            $0.metricsToken = "metrics-token-0123456789"
        }
        try await h.run { api in
            try await api.register("metered")
            let token = try await api.token("metered")
            #expect(try await api.signIn("metered", "wrong password").status == 401)
            #expect(try await api.call(.get, "/v1/nothing-here").status == 404)
            #expect(try await api.call(.delete, "/v1/me").status == 405)
            #expect(
                try await api.call(
                    .post,
                    "/v1/accounts",
                    raw: Data(repeating: 0x20, count: 70_000),
                    headers: [.contentType: "application/json"]
                ).status == 413
            )
            #expect(try await api.signIn("metered", "wrong again!").status == 401)
            #expect(try await api.signIn("metered", "and again!!").status == 429)
            // A real failure: the sessions table is gone, so authenticating a token fails in the store.
            try await h.store.sql.raw("DROP TABLE sessions").run()
            let broken = try await api.call(.get, "/v1/me", token: token)
            #expect(broken.status == 500 && broken.isProblem && broken.code == "internal")
            let text = String(
                decoding: try await api.call(.get, "/metrics", token: "metrics-token-0123456789").body,
                as: UTF8.self
            )
            for (route, method, status) in [
                ("/v1/sessions", "POST", 401), ("NotFound", "GET", 404), ("NotFound", "DELETE", 405),
                ("/v1/accounts", "POST", 413), ("/v1/sessions", "POST", 429), ("/v1/me", "GET", 500),
            ] {
                let seen = Self.lines(text, route: route, method: method, status: status)
                #expect(seen.count >= 1, "\(method) \(route) \(status) is counted")
                #expect(seen.timed, "\(method) \(route) \(status) has a duration")
            }
            #expect(
                Self.lines(text, route: "/v1/sessions", method: "POST", status: 500).count == 0,
                "no 4xx counted as 500"
            )
            #expect(
                Self.lines(text, route: "NotFound", method: "DELETE", status: 404).count == 0,
                "the 405 is not counted as 404"
            )
        }
    }
}
