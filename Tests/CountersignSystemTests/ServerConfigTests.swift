import CountersignAPI
import CountersignTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The server's configuration file and its one order (flag, then environment variable, then file, then
/// default), and the metrics token file, on servers started (the refusals alone are in
/// CountersignCLITests/ServerConfigTests.swift).
@Suite struct ServerConfigTests {
    /// Starts the server as `countersign serve ARGS` and returns the two lines it prints (listening, web client).
    static func start(_ t: CLI, _ arguments: [String], environment: [String: String] = [:]) throws -> String {
        let process = try Spawned(
            CLI.binary,
            ["serve"] + arguments,
            environment: ["COUNTERSIGN_EXIT_WITH_PARENT": "1"].merging(environment) { $1 },
            directory: t.dir.path,
            stdout: .pipe,
            stderr: .null
        )
        defer {
            process.signal(SIGKILL)
            _ = process.wait()
        }
        var text = Data()
        let deadline = Date().addingTimeInterval(60)
        while text.split(separator: UInt8(ascii: "\n")).count < 2, Date() < deadline {
            let chunk = process.output!.availableData
            if chunk.isEmpty { break }
            text += chunk
        }
        return String(decoding: text, as: UTF8.self)
    }

    @Test func aFileSetsWhatNoVariableOrFlagDoesInThatOrder() throws {
        let t = try CLI()
        let config = t.path("config.json")
        try t.write(
            "config.json",
            Data(
                """
                {"port": 0, "database": "sqlite:\(t.path("file.sqlite"))", "captcha": "off",
                 "public-url": "https://file.example.com", "trusted-proxies": ["10.0.0.0/8"], "log-level": "warning",
                 "auth-codes-without-approval": false}
                """.utf8
            )
        )
        let fromFile = try Self.start(t, ["--config", config])
        #expect(
            fromFile.contains("file.sqlite") && fromFile.contains("web client: https://file.example.com/"),
            "\(fromFile)"
        )

        let fromVariables = try Self.start(
            t,
            [],
            environment: ["COUNTERSIGN_CONFIG": config, "COUNTERSIGN_PUBLIC_URL": "https://env.example.com"]
        )
        #expect(
            fromVariables.contains("file.sqlite") && fromVariables.contains("web client: https://env.example.com/"),
            "the variable wins over the file: \(fromVariables)"
        )

        let fromFlags = try Self.start(
            t,
            [
                "--config", config, "--public-url", "https://flag.example.com", "--database",
                "sqlite:" + t.path("flag.sqlite"),
            ],
            environment: ["COUNTERSIGN_PUBLIC_URL": "https://env.example.com"]
        )
        #expect(
            fromFlags.contains("flag.sqlite") && fromFlags.contains("web client: https://flag.example.com/"),
            "the flag wins over both: \(fromFlags)"
        )
        #expect(!t.exists("countersign.sqlite"), "the default database was never made")

        // An empty variable is unset: the file's value stays.
        let empty = try Self.start(t, ["--config", config], environment: ["COUNTERSIGN_PUBLIC_URL": ""])
        #expect(empty.contains("web client: https://file.example.com/"), "\(empty)")
    }

    /// Issue 33: `/metrics` is behind a bearer token read from a file; a missing file gets a new random
    /// token, private to the server's user; a file that cannot be a token is refused before anything starts.
    /// A server with an APNs key from a private file starts (its refusals: CountersignCLITests).
    @Test func aServerWithAnAPNsKeyStarts() throws {
        let t = try CLI()
        let key = try t.p256KeyFile("AuthKey.p8")
        let printed = try Self.start(
            t,
            ["--port", "0", "--captcha", "off", "--database", "sqlite:" + t.path("apns.sqlite")],
            environment: [
                "COUNTERSIGN_APNS_KEY_FILE": key, "COUNTERSIGN_APNS_KEY_ID": "ABCDE12345",
                "COUNTERSIGN_APNS_TEAM_ID": "TEAM123456", "COUNTERSIGN_APNS_TOPIC": "com.example.app",
            ]
        )
        #expect(printed.contains("countersign listening on http://"), "\(printed)")
    }

    @Test func theMetricsTokenFileIsMadeOrRead() async throws {
        let t = try CLI()
        let path = t.path("metrics.token")
        let server = try ServeTests.Server(
            database: "sqlite:" + t.path("m.sqlite"),
            in: t.dir,
            environment: ["COUNTERSIGN_METRICS_TOKEN_FILE": path]
        )
        defer { _ = server.signal(SIGTERM) }
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let token = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .newlines)
        #expect(token.count == 43 && Base64URL(text: token)?.bytes.count == 32, "\(token)")
        #expect(try await server.metrics().contains("countersign_push_connections"))
        var anonymous = URLRequest(url: URL(string: server.url + "/metrics")!)
        let (_, refused) = try await URLSession.shared.data(for: anonymous)
        #expect((refused as? HTTPURLResponse)?.statusCode == 401)
        anonymous.setValue("Bearer \(token.dropLast())", forHTTPHeaderField: "Authorization")
        let (_, wrong) = try await URLSession.shared.data(for: anonymous)
        #expect((wrong as? HTTPURLResponse)?.statusCode == 401)
        // The same file at the next start: the same token.
        let again = try ServeTests.Server(
            database: "sqlite:" + t.path("m2.sqlite"),
            in: t.dir,
            environment: ["COUNTERSIGN_METRICS_TOKEN_FILE": path]
        )
        defer { _ = again.signal(SIGTERM) }
        #expect(try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .newlines) == token)
        #expect(try await again.metrics().contains("countersign_push_connections"))
        for (content, words) in [
            ("short\n", "16 to 1024 printable ASCII"), ("has a space in it!!\n", "without spaces"),
        ] {
            try t.write("bad.token", Data(content.utf8))
            chmod(t.path("bad.token"), 0o600)
            let r = try t.cs(
                "serve",
                "--metrics-token-file",
                t.path("bad.token"),
                "--database",
                "sqlite:" + t.path("never.sqlite"),
                "--port",
                "0"
            )
            #expect(r.status == 64 && r.stderr.contains(words) && r.stdout.isEmpty, "\(r.status) \(r.stderr)")
        }
        // Readable by others, a symbolic link, a FIFO: refused, before anything starts.
        try t.write("open.token", Data("0123456789abcdefghij\n".utf8))
        chmod(t.path("open.token"), 0o644)
        symlink(path, t.path("link.token"))
        mkfifo(t.path("fifo.token"), 0o600)
        for (name, words) in [
            ("open.token", "may be read by other users"), ("link.token", "a symbolic link is refused"),
            ("fifo.token", "is not a regular file"),
        ] {
            let r = try t.cs(
                "serve",
                "--metrics-token-file",
                t.path(name),
                "--database",
                "sqlite:" + t.path("never.sqlite"),
                "--port",
                "0"
            )
            #expect(r.status == 64 && r.stderr.contains(words), "\(name): \(r.status) \(r.stderr)")
        }
        let nowhere = try t.cs(
            "serve",
            "--metrics-token-file",
            "/nonexistent-dir/metrics.token",
            "--database",
            "sqlite:" + t.path("never.sqlite"),
            "--port",
            "0"
        )
        #expect(
            nowhere.status == 64 && nowhere.stderr.contains("cannot create the metrics token file"),
            "\(nowhere.stderr)"
        )
    }
}
