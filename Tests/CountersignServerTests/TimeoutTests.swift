import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import CountersignServer

/// Issue 8.3: connections that send nothing, half a header or a trickling body are closed.
@Suite(.closesStorage) struct TimeoutTests {
    struct Outcome: Sendable {
        var closed: Bool
        var seconds: TimeInterval
        var data = ""
        /// Closed before the last piece was sent: by a timeout, not by the request ending.
        var closedEarly = false
    }

    /// The bounds below come from the configured timeouts, with room for a loaded machine (a busy CI host
    /// delays each step by seconds): a connection the server never closes is told apart by trickling
    /// far longer than any bound, not by a tight upper bound on when it was closed.
    static let idle: TimeInterval = 1
    static let read: TimeInterval = 2
    static let slack: TimeInterval = 10

    /// Sends `pieces` one at a time, `gap` seconds apart, until the server closes; then waits `wait`.
    static func trickle(
        _ port: Int,
        _ pieces: [String],
        gap: TimeInterval,
        wait: TimeInterval = 6
    ) async throws -> Outcome {
        try await RawConnection.blocking {
            let c = try RawConnection(port: port)
            let start = Date()
            var data = Data()
            for piece in pieces {
                guard c.send(piece) else {
                    return Outcome(closed: true, seconds: Date().timeIntervalSince(start), closedEarly: true)
                }
                let r = c.readUntilClosed(timeout: gap)
                data += r.data
                if r.closed {
                    return Outcome(
                        closed: true,
                        seconds: Date().timeIntervalSince(start),
                        data: String(decoding: data, as: UTF8.self),
                        closedEarly: true
                    )
                }
            }
            let r = c.readUntilClosed(timeout: wait)
            data += r.data
            return Outcome(
                closed: r.closed,
                seconds: Date().timeIntervalSince(start),
                data: String(decoding: data, as: UTF8.self)
            )
        }
    }

    @Test func idleSlowHeadersAndSlowBodiesAreClosed() async throws {
        let h = try await Harness.make(.sqlite) {
            $0.idleTimeout = Self.idle
            $0.readTimeout = Self.read
        }
        let app = Application(
            router: try h.router(),
            server: CountersignServer.httpServer(h.config, push: h.services.push),
            configuration: .init(address: .hostname("127.0.0.1", port: 0))
        )
        do {
            try await app.test(.live) { client in
                let port = client.port!
                let silent = try await Self.trickle(port, [], gap: 0, wait: Self.idle + Self.slack)
                #expect(silent.closed, "a silent connection is closed: \(silent)")

                // Headers that never finish (slowloris): a byte every 300 ms is not activity. The header is
                // long enough to trickle for well over the read timeout plus the slack.
                let trickled = Int((Self.read + Self.slack) / 0.3) + 10
                let header = ["GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "] + Array(repeating: "a", count: trickled)
                let slowloris = try await Self.trickle(port, header, gap: 0.3)
                #expect(slowloris.closedEarly, "unfinished headers are cut off: \(slowloris)")

                // A whole request is answered; then the kept-alive connection idles out.
                let kept = try await Self.trickle(
                    port,
                    ["GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"],
                    gap: 0,
                    wait: Self.idle + Self.slack
                )
                #expect(kept.data.hasPrefix("HTTP/1.1 200") && kept.closed, "\(kept)")

                // A body trickled a byte at a time: each byte resets the idle timer, not the read timeout.
                // Content-Length is larger than everything trickled, so only a timeout ends it early.
                let spaces = Int((Self.read + Self.slack) / 0.25) + 10
                let head =
                    "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(spaces + 100)\r\n\r\n{"
                let body = try await Self.trickle(port, [head] + Array(repeating: " ", count: spaces), gap: 0.25)
                #expect(
                    body.closedEarly && body.seconds > Self.idle + 0.5,
                    "dropped after the read timeout, not the idle one: \(body)"
                )

                let r = try await RawConnection.exchange(
                    port: port,
                    "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                )
                #expect(r.hasPrefix("HTTP/1.1 200"), "a normal client is unaffected")
            }
        } catch {
            await h.close()
            throw error
        }
        await h.close()
    }
}
