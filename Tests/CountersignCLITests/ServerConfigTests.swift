import CountersignTestSupport
import Foundation
import Testing

/// The server's configuration file and its one order (flag, then environment variable, then file, then
/// default); `countersign serve` and `countersign admin` running `countersign-server` from beside the tool.
/// Here what is refused before a port or a database is opened; the servers started are in
/// CountersignSystemTests/ServerConfigTests.swift.
@Suite struct ServerConfigTests {
    static let server = URL(fileURLWithPath: CLI.binary).deletingLastPathComponent()
        .appendingPathComponent("countersign-server").path

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
            (#"{"admin-contact": "it\u0007desk"}"#, "admin-contact in \(t.path("bad.json")) takes 1 to 200 printable"),
            (#"{"stay-signed-in-days": 401}"#, "stay-signed-in-days in \(t.path("bad.json")) takes 0 to 400 days"),
            (
                #"{"stay-signed-in-hours-without-device": 0}"#,
                "stay-signed-in-hours-without-device in \(t.path("bad.json")) takes a whole number of at least 1"
            ),
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

    /// APNs takes its four settings together, its key from a file kept as a secret is (not a link, not readable by
    /// others, a regular file), and its test-only settings only beside an APNs of a test's own.
    @Test func apnsSettingsAreAllOrNoneAndItsKeyFileIsKeptPrivate() throws {
        let t = try CLI()
        let database = "sqlite:" + t.path("never.sqlite")
        let key = try t.p256KeyFile("AuthKey.p8")
        let all = [
            "COUNTERSIGN_APNS_KEY_FILE=\(key)", "COUNTERSIGN_APNS_KEY_ID=ABCDE12345",
            "COUNTERSIGN_APNS_TEAM_ID=TEAM123456",
            "COUNTERSIGN_APNS_TOPIC=com.example.app",
        ]
        func serve(_ environment: [String]) throws -> CLI.Output {
            try t.run("/usr/bin/env", environment + [Self.server, "serve", "--database", database, "--port", "0"])
        }
        try t.write("open.p8", try Data(contentsOf: URL(fileURLWithPath: key)))
        chmod(t.path("open.p8"), 0o644)
        symlink(key, t.path("link.p8"))
        try t.write("junk.p8", Data("not a key".utf8))
        chmod(t.path("junk.p8"), 0o600)
        func with(_ file: String) -> [String] { ["COUNTERSIGN_APNS_KEY_FILE=\(file)"] + all.dropFirst() }
        let cases: [([String], String)] = [
            (["COUNTERSIGN_APNS_KEY_ID=ABCDE12345"], "APNs needs all of"),
            (with(t.path("none.p8")), "cannot read the APNs key file"),
            (with(t.path("open.p8")), "may be read by other users; chmod 600"),
            (with(t.path("link.p8")), "a symbolic link is refused"),
            (with(t.dir.path), "is not a regular file"),
            (with(t.path("junk.p8")), "APNs: "),
            (all + ["COUNTERSIGN_APNS_CA_FILE=\(key)"], "is for a test's APNs"),
            (["COUNTERSIGN_APNS_ENDPOINT=https://localhost:1"], "is set, but APNs is not"),
            (all + ["COUNTERSIGN_APNS_ENDPOINT=http://localhost:1"], "takes an https:// origin"),
            (all + ["COUNTERSIGN_APNS_TIME_SENSITIVE=yes"], "takes 1"),
        ]
        for (environment, words) in cases {
            let r = try serve(environment)
            #expect(r.status == 64 && r.stderr.contains(words) && r.stdout.isEmpty, "\(environment): \(r.stderr)")
        }
        #expect(!t.exists("never.sqlite"))
    }

    /// `admin` finds the database the same way, and names where it looked.
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
