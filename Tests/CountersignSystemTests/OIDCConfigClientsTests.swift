import CountersignAPI
import CountersignTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// OpenID Connect clients defined by the configuration file (`oidc-clients`, docs/SERVER.md): applied at each
/// start (added, changed, removed with what they held), never changed by `admin oidc-client`, and a file that
/// gets a client wrong refused before anything starts, saying which client and what is wrong.
@Suite struct OIDCConfigClientsTests {
    static func write(_ t: CLI, _ clients: String, database: String) throws -> String {
        try t.write(
            "config.json",
            Data(
                """
                {"port": 0, "database": "\(database)", "captcha": "off", "public-url": "https://cs.example.com",
                 "oidc-clients": \(clients)}
                """.utf8
            )
        )
        return t.path("config.json")
    }

    /// `countersign serve --config FILE` once: its exit status (nil while it serves, then stopped) and stderr.
    static func serve(_ t: CLI, _ config: String) throws -> (listening: Bool, stderr: String) {
        let log = t.path("serve-\(UUID().uuidString).log")
        let process = try Spawned(
            CLI.binary,
            ["serve", "--config", config],
            environment: ["COUNTERSIGN_EXIT_WITH_PARENT": "1"],
            directory: t.dir.path,
            stdout: .pipe,
            stderr: .file(log)
        )
        var text = Data()
        let deadline = Date().addingTimeInterval(60)
        while !text.contains(UInt8(ascii: "\n")), Date() < deadline {
            let chunk = process.output!.availableData
            if chunk.isEmpty { break }
            text += chunk
        }
        let listening = String(decoding: text, as: UTF8.self).contains("listening on")
        process.signal(SIGTERM)
        _ = process.wait()
        return (listening, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
    }

    @Test func theFilesClientsAreAppliedAtEachStartAndOnlyThere() throws {
        let t = try CLI()
        let database = "sqlite:" + t.path("cs.sqlite")
        let made = try t.cs("admin", "oidc-client", "new-secret")
        try #require(made.status == 0, "\(made.stderr)")
        let lines = Dictionary(
            made.text.split(separator: "\n").compactMap { line -> (String, String)? in
                let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                return parts.count == 2 ? (parts[0], parts[1]) : nil
            },
            uniquingKeysWith: { a, _ in a }
        )
        let secret = try #require(lines["client_secret"])
        let hash = try #require(lines["secret-sha256"])
        #expect(secret.hasPrefix("cs_secret_") && hash.count == 64)

        let two = """
            [{"id": "grafana", "name": "Grafana", "redirect-uris": ["https://grafana.example.com/login/generic_oauth"],
              "secret-sha256": "\(hash)", "policy": "mfa", "offline-access": true},
             {"id": "cli-app", "public": true, "redirect-uris": ["http://127.0.0.1/callback"], "policy": "password",
              "pairing": true}]
            """
        let first = try Self.serve(t, try Self.write(t, two, database: database))
        #expect(first.listening, "\(first.stderr)")
        let list = try t.cs("admin", "oidc-client", "list", "--database", database)
        #expect(list.text.contains("grafana  Grafana  confidential  mfa  (configuration file)"), "\(list.text)")
        #expect(list.text.contains("cli-app  cli-app  public  password  (configuration file)"), "\(list.text)")
        let shown = try t.cs("admin", "oidc-client", "show", "cli-app", "--database", database)
        #expect(shown.text.contains("pairs authenticators: yes"), "\(shown.text)")
        // Changed only in the file.
        let update = try t.cs(
            "admin",
            "oidc-client",
            "update",
            "grafana",
            "--policy",
            "password",
            "--database",
            database
        )
        #expect(update.status != 0 && update.stderr.contains("configuration file"), "\(update.stderr)")
        let remove = try t.cs("admin", "oidc-client", "remove", "grafana", "--database", database)
        #expect(remove.status != 0 && remove.stderr.contains("configuration file"), "\(remove.stderr)")
        // An administrator's own client beside them is left alone by the file, and the file may not take it.
        let own = try t.cs(
            "admin",
            "oidc-client",
            "add",
            "mine",
            "--redirect-uri",
            "https://mine.example.com/cb",
            "--database",
            database
        )
        #expect(own.status == 0, "\(own.stderr)")

        // The next start: grafana changed, cli-app gone.
        let one = """
            [{"id": "grafana", "name": "Grafana Labs", "redirect-uris": ["https://grafana.example.com/login/generic_oauth"],
              "secret-sha256": "\(hash)", "policy": "password"}]
            """
        let second = try Self.serve(t, try Self.write(t, one, database: database))
        #expect(second.listening, "\(second.stderr)")
        let after = try t.cs("admin", "oidc-client", "list", "--database", database)
        #expect(
            after.text.contains("grafana  Grafana Labs  confidential  password  (configuration file)"),
            "\(after.text)"
        )
        #expect(!after.text.contains("cli-app") && after.text.contains("mine"), "\(after.text)")

        // Refused before anything starts, naming the client and what is wrong.
        for (clients, words) in [
            (
                #"[{"id": "mine", "public": true, "redirect-uris": ["http://127.0.0.1/cb"]}]"#,
                "admin oidc-client remove"
            ),
            (#"[{"id": "bad1", "redirect-uris": ["https://a.example.com/cb"]}]"#, "secret-sha256"),
            (#"[{"id": "bad2", "public": true, "redirect-uris": ["javascript:alert(1)"]}]"#, "javascript:alert(1)"),
            (#"[{"id": "bad3", "public": true, "redirect-uris": ["http://127.0.0.1/cb"], "colour": "red"}]"#, "colour"),
            (
                #"[{"id": "bad4", "public": "yes", "redirect-uris": ["http://127.0.0.1/cb"]}]"#,
                "public takes true or false"
            ),
            (
                #"[{"id": "bad5", "public": true, "redirect-uris": ["http://127.0.0.1/cb"]}, {"id": "bad5", "public": true, "redirect-uris": ["http://127.0.0.1/cb"]}]"#,
                "twice"
            ),
            (#"{"id": "bad6"}"#, "takes a list of clients"),
            (
                #"[{"id": "bad7", "redirect-uris": ["https://a.example.com/cb"], "secret-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}]"#,
                "secret-sha256"
            ),
            (#"[{"id": "bad8", "public": true, "public": false, "redirect-uris": ["http://127.0.0.1/cb"]}]"#, "twice"),
            (#"[{"id": "bad9"#, "JSON"),
            (#"[{"name": "no id"}]"#, "has no \"id\""),
        ] {
            let refused = try Self.serve(t, try Self.write(t, clients, database: database))
            #expect(!refused.listening && refused.stderr.contains(words), "\(words): \(refused.stderr)")
        }
        let unchanged = try t.cs("admin", "oidc-client", "list", "--database", database)
        #expect(unchanged.text == after.text, "a refused file changed nothing")
    }
}
