import CountersignAPI
import CountersignTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The server's configuration file and its one order (flag, then environment variable, then file, then
/// default); `countersign serve` and `countersign admin` running `countersign-server` from beside the tool.
@Suite struct ServerConfigTests {
    static let server = URL(fileURLWithPath: CLI.binary).deletingLastPathComponent()
        .appendingPathComponent("countersign-server").path

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

    /// Each refusal says what is wrong and where, exits 64 and starts nothing.
    @Test func badFilesAreRefusedWithTheirFault() throws {
        let t = try CLI()
        let database = "sqlite:" + t.path("never.sqlite")
        let cases: [(String, String)] = [
            (#"{"prot": 8080}"#, "unknown setting `prot`: did you mean port?"),
            (#"{"database": "sqlite:x", "exit-with-parent": true}"#, "unknown setting `exit-with-parent`"),
            (#"{"port": "8080"}"#, "port in \(t.path("bad.json")) takes a whole number"),
            (#"{"auth-codes-without-approval": 1}"#, "auth-codes-without-approval in"),
            (#"{"trusted-proxies": [1]}"#, "not one JSON object of settings"),
            (#"{"trusted-proxies": ["10.0.0.1,10.0.0.2"]}"#, "an entry has a comma"),
            (#"["port", 8080]"#, "not one JSON object of settings"),
            (#"{"port": 80"#, "not one JSON object of settings"),
            (#"{"port": 8080.5}"#, "not one JSON object of settings"),
            (#"{"port": 1, "captcha": "off", "p\u006frt": 2}"#, "sets port twice"),
            (#"{"log-level": "verbose"}"#, "log-level in \(t.path("bad.json")) must be trace"),
            (
                #"{"idle-timeout": 0}"#,
                "--idle-timeout (or idle-timeout in \(t.path("bad.json"))) takes 1 to 3600 seconds"
            ),
        ]
        for (json, message) in cases {
            try t.write("bad.json", Data(json.utf8))
            let r = try t.cs("serve", "--config", t.path("bad.json"), "--database", database, "--port", "0")
            #expect(r.status == 64, "\(json): exit \(r.status): \(r.stderr)")
            #expect(r.stderr.hasPrefix("Error: ") && r.stderr.contains(message), "\(json): \(r.stderr)")
            #expect(r.stdout.isEmpty, "\(json): nothing started")
        }
        let missing = try t.cs("serve", "--config", t.path("none.json"), "--database", database)
        #expect(
            missing.status == 64 && missing.stderr.contains("cannot read the configuration file"),
            "\(missing.stderr)"
        )

        // Whoever may write the file chooses the database and the trusted proxies.
        try t.write("open.json", Data(#"{"port": 0}"#.utf8))
        chmod(t.path("open.json"), 0o666)
        let open = try t.cs("serve", "--config", t.path("open.json"), "--database", database)
        #expect(open.status == 64 && open.stderr.contains("may be written by other users"), "\(open.stderr)")
        // Another user's file, even one nobody else may write; a FIFO (which would hang a plain read).
        try t.write("theirs.json", Data(#"{"port": 0}"#.utf8))
        chmod(t.path("theirs.json"), 0o600)
        chown(t.path("theirs.json"), 65534, 65534)
        let theirs = try t.cs("serve", "--config", t.path("theirs.json"), "--database", database)
        #expect(theirs.status == 64 && theirs.stderr.contains("belongs to another user"), "\(theirs.stderr)")
        mkfifo(t.path("fifo.json"), 0o600)
        let fifo = try t.cs("serve", "--config", t.path("fifo.json"), "--database", database)
        #expect(fifo.status == 64 && fifo.stderr.contains("is not a regular file"), "\(fifo.stderr)")
        #expect(!t.exists("never.sqlite"))
    }

    /// `admin` finds the database the same way, and names where it looked.
    /// Issue 33: `/metrics` is behind a bearer token read from a file; a missing file gets a new random
    /// token, private to the server's user; a file that cannot be a token is refused before anything starts.
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

    @Test func adminReadsTheDatabaseFromTheFile() throws {
        let t = try CLI()
        try t.write("config.json", Data(#"{"database": "sqlite:\#(t.path("gone.sqlite"))"}"#.utf8))
        let r = try t.run(
            "/usr/bin/env",
            ["-u", "COUNTERSIGN_DATABASE", CLI.binary, "admin", "messages", "--config", t.path("config.json")]
        )
        #expect(r.status == 64, "exit \(r.status): \(r.stderr)")
        #expect(
            r.stderr.contains("no database at \(t.path("gone.sqlite")) (database in \(t.path("config.json")))"),
            "\(r.stderr)"
        )
    }

    /// The tool runs the server binary beside it, and says so plainly when it is not there.
    @Test func serveAndAdminRunTheServerBinaryBesideTheTool() throws {
        let t = try CLI()
        let help = try t.cs("serve", "--help")
        #expect(help.status == 0 && String(decoding: help.stdout, as: UTF8.self).contains("countersign-server serve"))
        let helpAdmin = try t.cs("help", "admin")
        #expect(helpAdmin.status == 0 && String(decoding: helpAdmin.stdout, as: UTF8.self).contains("backup"))
        let version = try t.run(Self.server, ["version"])
        #expect(String(decoding: version.stdout, as: UTF8.self).hasPrefix("countersign-server 0."))

        // A copy of the tool alone in a directory.
        let lonely = t.dir.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: lonely, withIntermediateDirectories: true)
        let copy = lonely.appendingPathComponent("countersign").path
        try FileManager.default.copyItem(atPath: CLI.binary, toPath: copy)
        let r = try t.run(copy, ["serve", "--port", "0"])
        #expect(r.status == 69, "exit \(r.status)")
        #expect(
            r.stderr.contains(
                "runs countersign-server, which could not be started from \(lonely.path)/countersign-server"
            ),
            "\(r.stderr)"
        )
        #expect(try t.run(copy, ["--version"]).status == 0, "the tool itself still works")
    }
}
