import CountersignTestSupport
import Foundation
import Testing

/// Commands a new user reached for and did not find (issue 19, 20), against a real `countersign serve`.
@Suite struct MissingCommandsTests {
    typealias Dir = MessagingCLITests.Device

    @Test func accountSettingsShowAndChangeTheReauthenticationInterval() throws {
        let (_, server, d) = try MessagingCLITests.setUp(["alice"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        let shown = try alice.cs("account", "settings")
        #expect(shown.status == 0 && shown.text == "re-authentication: never\n", "\(shown.text) \(shown.stderr)")
        let set = try alice.cs("account", "settings", "--reauth-interval", "10m", "--password-file", alice.t.path("pw"))
        #expect(set.status == 0 && set.text == "re-authentication: every 10 minutes\n", "\(set.text) \(set.stderr)")
        #expect(try alice.cs("account", "whoami").text.contains("re-authentication: every 10 minutes"))
        let never = try alice.cs("account", "settings", "--reauth-interval", "never")
        #expect(never.status == 0 && never.text == "re-authentication: never\n", "\(never.text) \(never.stderr)")
        let json = try alice.cs("account", "settings", "--json")
        let object = try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any]
        #expect(json.status == 0 && object?["reauthIntervalMinutes"] as? Int == 0, "\(json.text)")
        let bad = try alice.cs("account", "settings", "--reauth-interval", "7")
        #expect(bad.status == 64 && bad.stderr.contains("never, 5m, 10m, 30m or 60m"), "\(bad.stderr)")
    }

    @Test func logoutEverywhereEndsEverySession() throws {
        let (t, server, d) = try MessagingCLITests.setUp(["alice"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        let other = Dir(t: t, name: "other")
        try MessagingCLITests.login(other, "alice", server)
        let out = try alice.cs("account", "logout", "--everywhere")
        #expect(out.status == 0 && out.text.contains("signed out alice everywhere"), "\(out.text) \(out.stderr)")
        let gone = try other.cs("account", "whoami")
        #expect(gone.status != 0 && gone.stderr.contains("your account session has ended"), "\(gone.stderr)")
        #expect(try alice.cs("account", "whoami").status != 0, "this one too")
    }

    @Test func deviceListAsJSON() throws {
        let (_, server, d) = try MessagingCLITests.setUp(["alice"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        let rows = try alice.json("device", "list", "--json")
        let row = try #require(rows.first)
        #expect(
            rows.count == 1 && row["id"] as? String == alice.deviceID && row["name"] as? String == "alice-laptop"
                && row["thisDevice"] as? Bool == true,
            "\(rows)"
        )
        #expect(
            (row["fingerprint"] as? String)?.range(of: "^[0-9a-f]{8}(:[0-9a-f]{8}){3}$", options: .regularExpression)
                != nil,
            "\(row)"
        )
        #expect(row["createdAt"] is String && row["revokedAt"] is NSNull, "\(row)")
    }

    /// `device rename` (a new user found the server and the web client could rename, the CLI not).
    @Test func deviceRename() throws {
        let (_, server, d) = try MessagingCLITests.setUp(["alice"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        let id = try #require(alice.deviceID)
        let renamed = try alice.cs("device", "rename", id, "  Alice's laptop ")
        #expect(
            renamed.status == 0 && renamed.text == "renamed device \(id): \"alice-laptop\" -> \"Alice's laptop\"\n",
            "\(renamed.text) \(renamed.stderr)"
        )
        #expect(try alice.json("device", "list", "--json").first?["name"] as? String == "Alice's laptop")
        let stored = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: alice.file("device.json"))))
                as? [String: Any]
        )
        #expect(stored["name"] as? String == "Alice's laptop", "this directory's record follows")
        let mixed = try alice.cs("device", "rename", id, "p\u{430}ypal")
        #expect(
            mixed.status != 0 && mixed.stderr.contains("mixes Latin and Cyrillic letters (U+0430 is Cyrillic)"),
            "\(mixed.stderr)"
        )
        let unknown = try alice.cs("device", "rename", "no-such-device", "x")
        #expect(unknown.status != 0 && unknown.stderr.contains("has no device no-such-device"), "\(unknown.stderr)")
        #expect(try alice.json("device", "list", "--json").first?["name"] as? String == "Alice's laptop")
    }

    @Test func cancelADelayedMessage() throws {
        let (_, server, d) = try MessagingCLITests.setUp(["alice", "bob"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        let id = try MessagingCLITests.sentID(try alice.cs("send", "--to", "bob", "--after", "1h", "later"))
        let cancelled = try alice.cs("cancel", String(id.prefix(6)))
        #expect(cancelled.status == 0 && cancelled.text == "cancelled \(id)\n", "\(cancelled.text) \(cancelled.stderr)")
        let rows = try alice.json("outbox", "--json")
        let receipts = try #require(rows.first { $0["id"] as? String == id }?["receipts"] as? [String: Any], "\(rows)")
        #expect(receipts["cancelled"] as? Bool == true, "\(receipts)")
        let again = try alice.cs("cancel", id)
        #expect(again.status != 0 && again.stderr.contains("already cancelled"), "\(again.stderr)")
        let delivered = try MessagingCLITests.sentID(try alice.cs("send", "--to", "bob", "now"))
        let late = try alice.cs("cancel", delivered)
        #expect(late.status != 0 && late.stderr.contains("already delivered"), "\(late.stderr)")
    }
}
