import CountersignTestSupport
import Foundation
import Testing

/// Deadlines and proxies against a real `countersign serve` (the broken servers alone are in
/// CountersignCLITests/ServerDeadlineTests.swift).
@Suite struct ServerDeadlineTests {
    typealias BrokenServer = InteropScript

    /// https:// to a server that never answers the TLS handshake, a plain HTTP server (a real `countersign
    /// serve`, which waits for a request) among them: the connect deadline (10 s), in words, saying to use
    /// http:// if the server serves plain HTTP, and no spinning.
    @Test func tlsToAPlainServerEndsInWords() throws {
        let t = try CLI()
        let broken = try BrokenServer("silent")
        let silent = try ServerDeadlines.register(t, "https://127.0.0.1:\(broken.port)")
        #expect(
            silent.output.status != 0
                && silent.output.stderr.contains("timed out: could not connect to 127.0.0.1:\(broken.port) within 10 s")
                && silent.output.stderr.contains("use an http:// URL"),
            "\(silent.output.stderr)"
        )
        #expect(silent.wall > 9 && silent.wall < 20, "\(silent.wall) s")
        #expect(silent.cpu < silent.wall * 0.1, "CPU \(silent.cpu) s in \(silent.wall) s")

        let server = try ServeTests.Server(database: "sqlite:" + t.path("p.sqlite"), in: t.dir)
        defer { _ = server.signal(SIGTERM) }
        let plain = try ServerDeadlines.register(t, server.url.replacingOccurrences(of: "http://", with: "https://"))
        #expect(
            plain.output.status != 0 && plain.output.stderr.contains("timed out")
                && plain.output.stderr.contains("use an http:// URL"),
            "\(plain.output.stderr)"
        )
        #expect(plain.wall < 20, "\(plain.wall) s")
        #expect(plain.cpu < plain.wall * 0.1, "CPU \(plain.cpu) s in \(plain.wall) s")
    }

    /// URLSession (libcurl) went through the proxies the environment names; so does the transport that
    /// replaced it: https_proxy/http_proxy tunnel through the proxy, no_proxy hosts go direct.
    @Test func proxiesFromTheEnvironmentAreUsed() throws {
        let t = try CLI()
        let server = try ServeTests.Server(database: "sqlite:" + t.path("p.sqlite"), in: t.dir)
        defer { _ = server.signal(SIGTERM) }
        let log = t.path("proxy.log")
        let proxy = try BrokenServer(script: "connect_proxy.py", [log])
        try t.write("pw", Data("correct horse\n".utf8))
        func register(_ user: String, _ environment: [String]) throws -> CLI.Output {
            try t.run(
                "/usr/bin/env",
                ["COUNTERSIGN_CONFIG_DIR=\(t.path(user))"] + environment
                    + [
                        CLI.binary, "account", "register", user, "--name", "N", "--lastname", "L", "--password-file",
                        t.path("pw"), "--server", server.url,
                    ]
            )
        }
        let proxied = try register("alice", ["http_proxy=http://127.0.0.1:\(proxy.port)", "no_proxy="])
        #expect(proxied.status == 0, "\(proxied.stderr)")
        let tunnels = String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self)
        #expect(tunnels.contains("CONNECT 127.0.0.1:\(server.url.split(separator: ":").last!)"), "\(tunnels)")
        let bypassed = try register(
            "bob",
            ["http_proxy=http://127.0.0.1:\(proxy.port)", "no_proxy=localhost,127.0.0.1"]
        )
        #expect(bypassed.status == 0, "\(bypassed.stderr)")
        #expect(
            String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self) == tunnels,
            "no_proxy goes direct"
        )
    }
}
