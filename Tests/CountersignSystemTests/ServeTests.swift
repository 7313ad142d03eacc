import CountersignClient
import CountersignCrypto
import CountersignTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The real `countersign serve` process: the printed URL, clean shutdown, and durability across SIGKILL.
@Suite struct ServeTests {
    final class Server {
        let process: Spawned
        let url: String
        /// The file of the bearer token `/metrics` asks for (made by the first server in `dir`).
        let metricsTokenFile: String

        init(
            database: String,
            in dir: URL,
            captcha: String = "off",
            port: Int = 0,
            environment: [String: String] = [:],
            arguments: [String] = [],
            log: String? = nil
        ) throws {
            metricsTokenFile =
                environment["COUNTERSIGN_METRICS_TOKEN_FILE"] ?? dir.appendingPathComponent("metrics.token").path
            process = try Spawned(
                CLI.binary,
                ["serve", "--port", "\(port)", "--database", database, "--captcha", captcha] + arguments,
                // Even if this test process crashes, the server stops (it watches its parent).
                environment: ["COUNTERSIGN_EXIT_WITH_PARENT": "1", "COUNTERSIGN_METRICS_TOKEN_FILE": metricsTokenFile]
                    .merging(environment) { $1 },
                directory: dir.path,
                stdout: .pipe,
                stderr: log.map { .file($0) } ?? .null
            )
            var line = Data()
            let deadline = Date().addingTimeInterval(60)
            while !line.contains(UInt8(ascii: "\n")), Date() < deadline {
                let chunk = process.output!.availableData
                if chunk.isEmpty { break }
                line += chunk
            }
            let text = String(decoding: line, as: UTF8.self)
            guard let range = text.range(of: "http://[^ ]+", options: .regularExpression) else {
                process.signal(SIGKILL)
                process.wait()
                throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "no URL printed: \(text)"])
            }
            url = String(text[range])
            let listening = #"^countersign listening on http://(127\.0\.0\.1|\[::1\]):"#
            #expect(text.range(of: listening, options: .regularExpression) != nil)
        }

        /// A test that fails or crashes between start and `signal` must not leave a server behind.
        deinit {
            if process.isRunning {
                process.signal(SIGKILL)
                process.wait()
            }
        }

        /// `GET /metrics` with the server's token.
        func metrics() async throws -> String {
            let token = try String(contentsOfFile: metricsTokenFile, encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            var r = URLRequest(url: URL(string: url + "/metrics")!)
            r.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            let (data, response) = try await URLSession.shared.data(for: r)
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            return String(decoding: data, as: UTF8.self)
        }

        func signal(_ s: Int32) -> Int32 {
            process.signal(s)
            return process.wait()
        }
    }

    static func request(
        _ method: String,
        _ url: String,
        json: [String: Any]? = nil,
        token: String? = nil
    ) async throws -> (Int, [String: Any]) {
        var r = URLRequest(url: URL(string: url)!)
        r.httpMethod = method
        if let json {
            r.httpBody = try JSONSerialization.data(withJSONObject: json)
            r.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let token { r.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: r)
        return (
            (response as! HTTPURLResponse).statusCode,
            (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
        )
    }

    /// The superuser URL of the PostgreSQL scripts/test.sh started (COUNTERSIGN_TEST_POSTGRES_URL), if any.
    static var postgresAdminURL: String? { ProcessInfo.processInfo.environment["COUNTERSIGN_TEST_POSTGRES_URL"] }

    /// The backends a test taking one runs on: PostgreSQL only when there is one, so that without it its
    /// case is absent rather than passed (`PostgresAvailability` fails a run that required it).
    static var backends: [String] { postgresAdminURL == nil ? ["sqlite"] : ["sqlite", "postgres"] }

    /// A fresh database URL: a SQLite file, or a new database on the PostgreSQL scripts/test.sh started.
    static func database(_ kind: String, _ t: CLI) throws -> String {
        guard kind == "postgres" else { return "sqlite:" + t.path("data.sqlite") }
        guard let admin = postgresAdminURL else {
            throw CocoaError(
                .fileReadUnknown,
                userInfo: [NSLocalizedDescriptionKey: "COUNTERSIGN_TEST_POSTGRES_URL is not set"]
            )
        }
        let name = "cs_serve_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        let r = try t.run("psql", [admin, "-q", "-c", "CREATE DATABASE \(name)"])
        guard r.status == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: r.stderr])
        }
        var c = URLComponents(string: admin)!
        c.path = "/\(name)"
        return c.string!
    }

    @Test(arguments: ServeTests.backends)
    func killedServerLosesNoAcknowledgedAccountOrSession(_ kind: String) async throws {
        let t = try CLI()
        let db = try Self.database(kind, t)
        var server = try Server(database: db, in: t.dir)
        #expect(try await Self.request("GET", server.url + "/healthz").0 == 200)
        var tokens: [String] = []
        // 8: the server allows 10 registrations per address per hour.
        for i in 0..<8 {
            let created = try await Self.request(
                "POST",
                server.url + "/v1/accounts",
                json: ["username": "user\(i)", "password": "correct horse", "name": "U", "lastname": "Ser"]
            )
            try #require(created.0 == 201, "registration \(i): \(created)")
            let session = try await Self.request(
                "POST",
                server.url + "/v1/sessions",
                json: ["username": "user\(i)", "password": "correct horse"]
            )
            tokens.append(try #require(session.1["token"] as? String, "sign-in \(i): \(session)"))
        }
        #expect(server.signal(SIGKILL) != 0)
        server = try Server(database: db, in: t.dir)
        for (i, token) in tokens.enumerated() {
            let me = try await Self.request("GET", server.url + "/v1/me", token: token)
            #expect(me.0 == 200 && me.1["username"] as? String == "user\(i)", "session \(i) survived SIGKILL")
        }
        #expect(server.signal(SIGTERM) == 0, "SIGTERM shuts down cleanly")
        // And after a clean restart the data is still there.
        server = try Server(database: db, in: t.dir)
        #expect(
            try await Self.request(
                "POST",
                server.url + "/v1/sessions",
                json: ["username": "user7", "password": "correct horse"]
            ).0 == 201
        )
        #expect(server.signal(SIGINT) == 0)
    }

    /// Every message the relay acknowledged (201) is there after SIGKILL, delayed ones included, and
    /// `admin messages` shows them as the server sees them: names, dates, sizes, ciphertext.
    @Test(arguments: ServeTests.backends)
    func acknowledgedMessagesSurviveSIGKILL(_ kind: String) async throws {
        let t = try CLI()
        let db = try Self.database(kind, t)
        var server = try Server(database: db, in: t.dir)
        let (alice, aliceKey) = try await CrashSafetyTests.person("alice", server)
        let (bob, _) = try await CrashSafetyTests.person("bob", server)
        var sent: Set<String> = []
        for i in 0..<10 {
            let m = try await alice.sendMessage(
                Array("secret number \(i)".utf8),
                to: ["bob"],
                from: "alice",
                signing: aliceKey,
                deliverAfter: i < 6 ? nil : 2
            )
            sent.insert(m.id)
        }
        #expect(server.signal(SIGKILL) != 0)
        server = try Server(database: db, in: t.dir)
        let after = CountersignClient(server: URL(string: server.url)!, deviceToken: bob.deviceToken)
        try await Task.sleep(for: .seconds(2.2))
        let page = try await after.fetchMessages()
        #expect(Set(page.messages.map(\.id)) == sent, "all 10 acknowledged sends survived, the 4 delayed ones came due")
        #expect(server.signal(SIGTERM) == 0)
        let admin = try t.cs("admin", "messages", "--database", db)
        let lines = admin.text.split(separator: "\n")
        #expect(admin.status == 0 && lines.count == 10, "\(admin.stderr)")
        #expect(lines.allSatisfy { $0.hasPrefix("alice => bob  ") && $0.contains(" bytes  ") }, "\(lines.first ?? "")")
        #expect(!admin.text.contains("secret number"))
        #expect(lines.filter { $0.contains("(deliver at ") }.count == 4)
    }

    @Test func badDatabaseArgumentsFailClearly() throws {
        let t = try CLI()
        let r = try t.cs("serve", "--database", "mysql://x")
        #expect(r.status != 0 && r.stderr.contains("sqlite:PATH or postgres://"), "\(r.stderr)")
        let missing = try t.cs("serve", "--database", "sqlite:/nonexistent-dir/x.sqlite", "--port", "0")
        #expect(missing.status != 0 && missing.stderr.contains("does not exist"), "\(missing.stderr)")
        let pw = try t.cs("serve", "--database", "postgres://u:secret@127.0.0.1:1/db", "--port", "0")
        #expect(
            pw.status != 0 && !pw.stderr.contains("secret"),
            "the password never reaches the terminal: \(pw.stderr)"
        )
        #expect(
            pw.stderr.contains("cannot reach PostgreSQL at 127.0.0.1:1: Connection refused"),
            "says where and why: \(pw.stderr)"
        )
        #expect(!pw.stderr.contains("Generic description"))
        let typo = try t.cs("serve", "--database", "not a url")
        #expect(
            typo.status != 0 && typo.stderr.contains("\"not a url\" is neither"),
            "the typo is shown as typed: \(typo.stderr)"
        )
        let scheme = try t.cs("serve", "--database", "postgress://bob:hunter2@db/x")
        #expect(
            scheme.status != 0 && !scheme.stderr.contains("hunter2") && scheme.stderr.contains("postgress://"),
            "\(scheme.stderr)"
        )
    }

    /// A database the PostgreSQL server does not have is named in the refusal.
    @Test(.enabled(if: ServeTests.postgresAdminURL != nil, "COUNTERSIGN_TEST_POSTGRES_URL is not set"))
    func aMissingPostgresDatabaseIsNamed() throws {
        let t = try CLI()
        var c = try #require(URLComponents(string: Self.postgresAdminURL ?? ""))
        c.path = "/no_such_database"
        let missing = try t.cs("serve", "--database", c.string!, "--port", "0")
        #expect(
            missing.status != 0 && missing.stderr.contains("refused: database \"no_such_database\" does not exist"),
            "\(missing.stderr)"
        )
    }

    /// Issue 19.14: a second server on a SQLite file already served is refused with a clear message,
    /// and the first keeps serving; once the first stops, the file can be served again.
    @Test func aSecondServerOnTheSameSQLiteFileIsRefused() async throws {
        let t = try CLI()
        let database = "sqlite:" + t.path("shared.sqlite")
        let first = try Server(database: database, in: t.dir)
        // Bounded: a second server that wrongly starts would serve forever.
        let second = try t.run("timeout", ["20", CLI.binary, "serve", "--port", "0", "--database", database])
        #expect(
            second.status != 0 && second.stderr.contains("another countersign server is already serving")
                && second.stderr.contains("shared.sqlite"),
            "\(second.status) \(second.stderr)"
        )
        #expect(try await Self.request("GET", first.url + "/v1/captcha").0 == 200, "the first server still answers")
        #expect(first.signal(SIGTERM) == 0)
        let again = try Server(database: database, in: t.dir)
        #expect(try await Self.request("GET", again.url + "/v1/captcha").0 == 200)
        _ = again.signal(SIGTERM)
    }

    /// Issue 8.9: the address is checked before the database is touched, and the error names it.
    @Test func aBusyPortOrAForeignHostFailsFirstAndLeavesNoFile() throws {
        let t = try CLI()
        let holder = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(holder) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(holder, $0, length) == 0 && listen(holder, 1) == 0 && getsockname(holder, $0, &length) == 0
            }
        }
        try #require(bound)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let busy = try t.cs("serve", "--port", "\(port)", "--database", "sqlite:" + t.path("busy.sqlite"))
        #expect(
            busy.status != 0 && busy.stderr.contains("127.0.0.1:\(port) is already in use; pick another --port"),
            "\(busy.stderr)"
        )
        #expect(!busy.stderr.contains("bind(descriptor"))
        #expect(!t.exists("busy.sqlite") && !t.exists("busy.sqlite-wal"), "no database file was created")
        let host = try t.cs(
            "serve",
            "--host",
            "999.1.1.1",
            "--port",
            "0",
            "--database",
            "sqlite:" + t.path("host.sqlite")
        )
        #expect(host.status != 0 && host.stderr.contains("--host 999.1.1.1"), "\(host.stderr)")
        let foreign = try t.cs(
            "serve",
            "--host",
            "192.0.2.55",
            "--port",
            "0",
            "--database",
            "sqlite:" + t.path("host.sqlite")
        )
        #expect(
            foreign.status != 0 && foreign.stderr.contains("192.0.2.55 is not an address of this machine"),
            "\(foreign.stderr)"
        )
        #expect(!t.exists("host.sqlite"))
        // An existing database is left as it was, not deleted.
        try t.write("kept.sqlite", Data())
        #expect(try t.cs("serve", "--port", "\(port)", "--database", "sqlite:" + t.path("kept.sqlite")).status != 0)
        #expect(t.exists("kept.sqlite"))
        let timeout = try t.cs("serve", "--idle-timeout", "0")
        #expect(timeout.status != 0 && timeout.stderr.contains("1 to 3600 seconds"), "\(timeout.stderr)")
    }
}

/// scripts/test.sh starts PostgreSQL and sets COUNTERSIGN_REQUIRE_POSTGRES=1: then a missing URL is a failure
/// here too, not a silently skipped half of the PostgreSQL cases (as `BackendAvailability` in the server's tests).
@Suite struct PostgresAvailability {
    @Test func postgresIsThereWhenRequired() {
        if ProcessInfo.processInfo.environment["COUNTERSIGN_REQUIRE_POSTGRES"] == "1" {
            #expect(ServeTests.backends.contains("postgres"), "COUNTERSIGN_TEST_POSTGRES_URL is not set")
        }
    }
}

/// `countersign account …` against a real server process, as a user runs it.
@Suite struct AccountCommandTests {
    @Test func registerLoginWhoamiPasswdAuditLogout() throws {
        let t = try CLI()
        let server = try ServeTests.Server(database: "sqlite:" + t.path("a.sqlite"), in: t.dir, captcha: "always")
        defer { _ = server.signal(SIGTERM) }
        setenv("COUNTERSIGN_CONFIG_DIR", t.path("config"), 1)
        defer { unsetenv("COUNTERSIGN_CONFIG_DIR") }
        try t.write("pw", Data("correct horse\n".utf8))
        try t.write("pw2", Data("a brand new password\n".utf8))
        let reg = try t.cs(
            "account",
            "register",
            "cliuser",
            "--name",
            "Cli",
            "--lastname",
            "User",
            "--password-file",
            "pw",
            "--server",
            server.url
        )
        #expect(reg.status == 0 && reg.text.contains("registered cliuser"), "\(reg.stderr)")
        let bad = try t.cs("account", "login", "cliuser", "--password-file", "pw2", "--server", server.url)
        #expect(bad.status != 0 && bad.stderr.contains("username or password is wrong"), "\(bad.stderr)")
        let login = try t.cs("account", "login", "cliuser", "--password-file", "pw", "--server", server.url)
        #expect(login.status == 0, "\(login.stderr)")
        var st = stat()
        #expect(stat(t.path("config/session.json"), &st) == 0 && st.st_mode & 0o777 == 0o600, "token file is 0600")
        #expect(stat(t.path("config"), &st) == 0 && st.st_mode & 0o777 == 0o700)
        let who = try t.cs("account", "whoami")
        #expect(who.status == 0 && who.text.hasPrefix("cliuser (Cli User)"), "\(who.stderr)")
        let pw = try t.cs("account", "passwd", "--password-file", "pw", "--new-password-file", "pw2")
        #expect(pw.status == 0, "\(pw.stderr)")
        let audit = try t.cs("account", "audit", "--limit", "5")
        #expect(
            audit.status == 0 && audit.text.contains("password-change") && audit.text.contains("wrong-password"),
            "\(audit.text)"
        )
        #expect(try t.cs("account", "logout").status == 0)
        #expect(!t.exists("config/session.json"))
        let after = try t.cs("account", "whoami")
        #expect(after.status != 0 && after.stderr.contains("not signed in"))
        let relogin = try t.cs("account", "login", "cliuser", "--password-file", "pw2", "--server", server.url)
        #expect(relogin.status == 0, "the new password works: \(relogin.stderr)")
        let badURL = try t.cs("account", "whoami", "--server", "ftp://x")
        #expect(badURL.status != 0 && badURL.stderr.contains("http://"))
    }
}
