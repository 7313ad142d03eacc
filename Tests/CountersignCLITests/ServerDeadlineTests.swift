import Foundation
import Testing

/// A server that never answers, answers forever or drips costs the CLI seconds and megabytes, not a core
/// or the machine's memory (issue 19.11, 19.12): Tests/interop/broken_server.py plays each.
@Suite struct ServerDeadlineTests {
    typealias BrokenServer = InteropScript

    struct Measured {
        var output: CLI.Output
        var wall: Double
        var cpu: Double
        var maxRSSKiB: Int
    }

    /// `countersign ARGS` in config directory `dir` under /usr/bin/time: wall clock, user + system CPU, peak RSS.
    static func measured(_ t: CLI, dir: String, _ args: [String]) throws -> Measured {
        let stats = t.path("time-\(UUID().uuidString)")
        let output = try t.run(
            "/usr/bin/time",
            ["-f", "%e %U %S %M", "-o", stats, "/usr/bin/env", "COUNTERSIGN_CONFIG_DIR=\(t.path(dir))", CLI.binary]
                + args
        )
        let fields =
            String(decoding: FileManager.default.contents(atPath: stats) ?? Data(), as: UTF8.self)
            .split(whereSeparator: \.isNewline).last?.split(separator: " ").compactMap { Double($0) } ?? []
        try #require(fields.count == 4, "no /usr/bin/time line: \(output.stderr)")
        return Measured(output: output, wall: fields[0], cpu: fields[1] + fields[2], maxRSSKiB: Int(fields[3]))
    }

    static func register(_ t: CLI, _ server: String) throws -> Measured {
        try t.write("pw", Data("correct horse\n".utf8))
        return try measured(
            t,
            dir: "cfg",
            [
                "account", "register", "alice", "--name", "N", "--lastname", "L", "--password-file", t.path("pw"),
                "--server", server,
            ]
        )
    }

    /// Issue 19.11: a 200 whose body never ends took `account register` to 17.5 GB. The answer is cut at
    /// the cap (4 MiB for such a call) and refused in words.
    @Test func anEndlessAnswerIsCutAtTheCap() throws {
        let t = try CLI()
        let broken = try BrokenServer("endless")
        let r = try Self.register(t, "http://127.0.0.1:\(broken.port)")
        #expect(
            r.output.status != 0 && r.output.stderr.contains("refused the server's answer: it was over 4 MiB"),
            "\(r.output.stderr)"
        )
        #expect(r.maxRSSKiB < 150 * 1024, "peak RSS \(r.maxRSSKiB) KiB")
        #expect(r.wall < 60, "\(r.wall) s")
    }

    /// An answer that starts and then drips a byte a second ends at the whole-answer deadline (30 s).
    @Test func aDrippingAnswerEndsAtTheWholeDeadline() throws {
        let t = try CLI()
        let broken = try BrokenServer("drip")
        let r = try Self.register(t, "http://127.0.0.1:\(broken.port)")
        #expect(
            r.output.status != 0 && r.output.stderr.contains("timed out")
                && r.output.stderr.contains("did not finish its answer within 30 s"),
            "\(r.output.stderr)"
        )
        // Bounds from the 30 s deadline: never before it, and well before twice it on a loaded machine.
        #expect(r.wall > 29 && r.wall < 60, "\(r.wall) s")
        #expect(r.cpu < r.wall * 0.1, "CPU \(r.cpu) s in \(r.wall) s")
    }

    /// Issue 19.12: against a socket that never answers, a command ran 45 s with 34 s of system CPU and
    /// printed `NSURLErrorDomain error -1001`. Now: 20 s to the first byte, "timed out" in words, and the
    /// wait costs next to no CPU.
    @Test func aSilentServerTimesOutInWordsWithoutSpinning() throws {
        let t = try CLI()
        let broken = try BrokenServer("silent")
        let r = try Self.register(t, "http://127.0.0.1:\(broken.port)")
        #expect(r.output.status != 0, "\(r.output.stderr)")
        #expect(
            r.output.stderr.contains("timed out: no answer from the server at 127.0.0.1:\(broken.port) within 20 s"),
            "\(r.output.stderr)"
        )
        #expect(!r.output.stderr.contains("NSURLErrorDomain"), "\(r.output.stderr)")
        #expect(r.wall > 19 && r.wall < 40, "\(r.wall) s")
        #expect(r.cpu < r.wall * 0.1, "CPU \(r.cpu) s in \(r.wall) s")
    }

    /// https:// to a server that never answers the TLS handshake, a plain HTTP server (a real `countersign
    /// serve`, which waits for a request) among them: the connect deadline (10 s), in words, saying to use
    /// http:// if the server serves plain HTTP, and no spinning.
    @Test func tlsToAPlainServerEndsInWords() throws {
        let t = try CLI()
        let broken = try BrokenServer("silent")
        let silent = try Self.register(t, "https://127.0.0.1:\(broken.port)")
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
        let plain = try Self.register(t, server.url.replacingOccurrences(of: "http://", with: "https://"))
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

extension InteropScript {
    /// Tests/interop/broken_server.py in one of its modes (silent, endless, drip…).
    convenience init(_ mode: String) throws { try self.init(script: "broken_server.py", [mode]) }
}
