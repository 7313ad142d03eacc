import CountersignTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a new user ran into (issue 19, 19), against a real `countersign serve` (`version` is checked in
/// CountersignCLITests/NewUserCLITests.swift).
@Suite struct NewUserCLITests {
    typealias Dir = MessagingCLITests.Device

    /// `login --otp` once opened the sign-in with a push to every authenticator: a number nobody was shown,
    /// left pending after a wrong code, and counted toward the push limit. The audit then cut the outcome
    /// off at 24 characters and had no --json.
    @Test func aSignInByPasscodeSendsNoPushAndTheAuditShowsItWhole() throws {
        let (t, server, alice, laptop) = try MFACLITests.setUp()
        defer { _ = server.signal(SIGTERM) }
        let phone = Dir(t: t, name: "phone")
        let made = try alice.cs("account", "mfa", "pairing-key")
        try #require(made.status == 0, "\(made.stderr)")
        let key = try #require(made.text.split(separator: "\n").first.map(String.init))
        // The hint names the server: a fresh authenticator directory has no signed-in one to default to.
        #expect(made.stderr.contains("countersign authenticator pair \(key) --server \(server.url)"), "\(made.stderr)")
        #expect(try MFACLITests.pair(phone, key, server: server).status == 0)

        let wrong = try MFACLITests.login(laptop, server, "--otp", "000000").finish()
        #expect(
            wrong.status != 0 && wrong.stderr.contains("not accepted") && !wrong.stdout.contains("Number to match"),
            "\(wrong)"
        )
        #expect(try phone.json("authenticator", "pending", "--json").isEmpty, "no push for a sign-in by passcode")

        let audit = try alice.cs("account", "audit")
        #expect(audit.status == 0 && audit.text.contains(" password-ok-second-factor-pending "), "\(audit.text)")
        let events = try alice.json("account", "audit", "--json")
        let pending = try #require(
            events.first { $0["outcome"] as? String == "password-ok-second-factor-pending" },
            "\(events)"
        )
        #expect(
            pending["kind"] as? String == "sign-in" && pending["address"] as? String == "127.0.0.1"
                && pending["at"] is String,
            "\(pending)"
        )
        // The SDK's user agent carries the version `--version` prints.
        let version = try t.cs("--version").text.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(pending["userAgent"] as? String == "countersign-swift/\(version)", "\(pending) vs \(version)")
    }

    /// `--json` output escapes what JSONSerialization lets through raw (C1, bidirectional and invisible
    /// characters): a user agent chosen by whoever tried to sign in cannot drive the terminal, and the
    /// JSON still says the same.
    /// The config directory is chosen by a leading `--config-dir` (which wins over COUNTERSIGN_CONFIG_DIR), and
    /// the top-level help says how.
    @Test func aLeadingConfigDirChoosesTheDirectory() throws {
        let (t, server, d) = try MessagingCLITests.setUp(["alice"])
        defer { _ = server.signal(SIGTERM) }
        let alice = try #require(d["alice"])
        let elsewhere = t.path("elsewhere")
        for args in [["--config-dir", alice.dir], ["--config-dir=\(alice.dir)"]] {
            let who = try t.run(
                "/usr/bin/env",
                ["COUNTERSIGN_CONFIG_DIR=\(elsewhere)", CLI.binary] + args + ["account", "whoami"]
            )
            #expect(who.status == 0 && who.text.hasPrefix("alice "), "\(args): \(who.text) \(who.stderr)")
        }
        // Without it, the variable is used as before.
        let other = try t.run("/usr/bin/env", ["COUNTERSIGN_CONFIG_DIR=\(elsewhere)", CLI.binary, "account", "whoami"])
        #expect(other.status != 0 && other.stderr.contains("not signed in"), "\(other.stderr)")
        for bad in [
            ["--config-dir"], ["--config-dir", "--help", "account", "whoami"], ["--config-dir=", "account", "whoami"],
        ] {
            let r = try t.run(CLI.binary, bad)
            #expect(r.status == 64 && r.stderr.contains("--config-dir needs a directory"), "\(bad): \(r.stderr)")
        }
        // A command printed to copy keeps the directory.
        let carol = try t.run(
            CLI.binary,
            [
                "--config-dir", t.path("carol"), "account", "register", "carol", "--name", "C", "--lastname", "D",
                "--password-file", t.path("pw"), "--server", server.url,
            ]
        )
        #expect(
            carol.status == 0
                && carol.text.contains("sign in with: countersign --config-dir \(t.path("carol")) account login carol"),
            "\(carol.text) \(carol.stderr)"
        )
        // After the command, or twice: said where it goes.
        for misplaced in [
            ["account", "whoami", "--config-dir", alice.dir],
            ["--config-dir", alice.dir, "--config-dir=x", "account", "whoami"],
        ] {
            let r = try t.run(CLI.binary, misplaced)
            #expect(r.status == 64 && r.stderr.contains("--config-dir goes before the command, once"), "\(r.stderr)")
        }
        // Only before the command: a message's text that reads `--config-dir` is text.
        let sent = try alice.cs("send", "--to", "alice", "--", "--config-dir")
        #expect(sent.status == 0, "\(sent.stderr)")
        let help = try t.cs("--help")
        #expect(help.text.contains("--config-dir DIR") && help.text.contains("COUNTERSIGN_CONFIG_DIR"), "\(help.text)")
        #expect(!FileManager.default.fileExists(atPath: elsewhere), "nothing was written where the variable pointed")
    }

    @Test func jsonOutputEscapesTerminalControls() async throws {
        let (_, server, d) = try MessagingCLITests.setUp(["alice"])
        defer { _ = server.signal(SIGTERM) }
        let agent = "evil\u{9b}31m\u{202e}txt.exe\u{200b}"
        var r = URLRequest(url: URL(string: server.url + "/v1/sessions")!)
        r.httpMethod = "POST"
        r.setValue("application/json", forHTTPHeaderField: "Content-Type")
        r.setValue(agent, forHTTPHeaderField: "User-Agent")
        r.httpBody = Data(#"{"username":"alice","password":"not the password"}"#.utf8)
        _ = try await URLSession.shared.data(for: r)
        let out = try d["alice"]!.cs("account", "audit", "--json")
        #expect(out.status == 0)
        #expect(
            !out.stdout.isEmpty
                && !String(decoding: out.stdout, as: UTF8.self).unicodeScalars.contains {
                    [0x9b, 0x202e, 0x200b].contains($0.value)
                }
        )
        let events = try #require(try JSONSerialization.jsonObject(with: out.stdout) as? [[String: Any]])
        #expect(events.contains { $0["userAgent"] as? String == agent }, "\(events)")
    }

    /// `watch` called this device's own sends "from another of your devices".
    @Test func watchTellsThisDevicesSendsFromOtherDevices() throws {
        let (t, server, d) = try MessagingCLITests.setUp(["alice", "bob"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        let desk = Dir(t: t, name: "alice-desk")
        try MessagingCLITests.login(desk, "alice", server)
        try MessagingCLITests.initDevice(desk, name: "alice-desk")
        #expect(try alice.cs("trust", "alice").status == 0)
        let watch = try MFACLITests.Running(alice, ["watch"])
        defer { watch.process.signal(SIGKILL) }
        let deadline = Date().addingTimeInterval(20)
        while !watch.stderr.contains("connected"), Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }

        let mine = try MessagingCLITests.sentID(try alice.cs("send", "--to", "bob", "from the laptop"))
        _ = try watch.wait(for: "^Sent from this device to bob at .*\\(id \(mine)\\)")
        let other = try MessagingCLITests.sentID(try desk.cs("send", "--to", "bob", "from the desk"))
        _ = try watch.wait(for: "^Sent from another of your devices \\(alice-desk\\) to bob at .*\\(id \(other)\\)")
        // This device's own send is never also told as another device's.
        #expect(
            watch.text.range(
                of: "(?m)^Sent from another of your devices .*\\(id \(mine)\\)",
                options: .regularExpression
            ) == nil,
            "\(watch.text)"
        )
    }

    /// An empty text, a recipient named twice and a message to oneself once passed without a word.
    @Test func recipientsNamedTwiceAndMessagesToYourself() throws {
        let (_, server, d) = try MessagingCLITests.setUp(["alice", "bob"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        let bob = d["bob"]!
        let twice = try alice.cs("send", "--to", "bob", "--to", "Bob", "hello once")
        #expect(
            twice.status == 0 && twice.stderr.contains("bob is named twice; sending once")
                && twice.text.contains(" to bob ("),
            "\(twice.text) \(twice.stderr)"
        )
        #expect(try bob.json("inbox", "--json").count == 1)

        let note = try alice.cs("send", "--to", "alice", "a note to myself")
        #expect(
            note.status == 0 && note.stderr.contains("you are sending to yourself")
                && note.text.contains("(a note to yourself: your own devices only)"),
            "\(note.text) \(note.stderr)"
        )
        let id = try MessagingCLITests.sentID(note)
        #expect(try alice.cs("outbox").status == 0)
        #expect(try alice.cs("read", id).text == "a note to myself", "your own note reads back here")

        let empty = try alice.cs("send", "--to", "bob", stdin: Data())
        #expect(empty.status == 64 && empty.stderr.contains("the message is empty"), "\(empty.stderr)")
        #expect(try bob.json("inbox", "--json").count == 1, "nothing more was sent")
    }
}
