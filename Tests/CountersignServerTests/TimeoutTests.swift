import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import CountersignServer

/// Issue 8.3: connections that send nothing, half a header or a trickling body are closed.
@Suite struct TimeoutTests {
    struct Outcome: Sendable {
        var closed: Bool
        var seconds: TimeInterval
        var data = ""
    }

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
                guard c.send(piece) else { return Outcome(closed: true, seconds: Date().timeIntervalSince(start)) }
                let r = c.readUntilClosed(timeout: gap)
                data += r.data
                if r.closed {
                    return Outcome(
                        closed: true,
                        seconds: Date().timeIntervalSince(start),
                        data: String(decoding: data, as: UTF8.self)
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
            $0.idleTimeout = 1
            $0.readTimeout = 2
        }
        let (router, push) = try await CountersignServer.build(
            service: h.service,
            storage: h.storage,
            config: h.config,
            clock: h.clock,
            logger: h.service.logger
        )
        let app = Application(
            router: router,
            server: CountersignServer.httpServer(h.config, push: push),
            configuration: .init(address: .hostname("127.0.0.1", port: 0))
        )
        do {
            try await app.test(.live) { client in
                let port = client.port!
                let silent = try await Self.trickle(port, [], gap: 0)
                #expect(silent.closed && silent.seconds < 4, "a silent connection is closed: \(silent)")

                // Headers that never finish (slowloris): a byte every 300 ms is not activity.
                let header = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".map(
                    String.init
                )
                let slowloris = try await Self.trickle(port, header, gap: 0.3)
                #expect(slowloris.closed && slowloris.seconds < 4, "unfinished headers are cut off: \(slowloris)")

                // A whole request is answered; then the kept-alive connection idles out.
                let kept = try await Self.trickle(port, ["GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"], gap: 0)
                #expect(kept.data.hasPrefix("HTTP/1.1 200") && kept.closed && kept.seconds < 4, "\(kept)")

                // A body trickled a byte at a time: each byte resets the idle timer, not the read timeout.
                let head =
                    "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"
                let body = try await Self.trickle(port, [head] + Array(repeating: " ", count: 40), gap: 0.25)
                #expect(
                    body.closed && body.seconds > 1.5 && body.seconds < 6,
                    "dropped after the 2 s read timeout: \(body)"
                )

                let r = try await RawConnection.exchange(
                    port: port,
                    "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                )
                #expect(r.hasPrefix("HTTP/1.1 200"), "a normal client is unaffected")
            }
        } catch {
            await h.storage.close()
            throw error
        }
        await h.storage.close()
    }
}
