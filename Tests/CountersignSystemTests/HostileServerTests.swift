import CountersignTestSupport
import Foundation
import Testing

/// The CLI against a server that lies (issue 19, 2 and 3): Tests/interop/hostile_proxy.py sits in front
/// of a real `countersign serve` and rewrites its answers the way a compromised server could.
@Suite struct HostileServerTests {
    typealias Device = MessagingCLITests.Device

    final class Proxy {
        let script: InteropScript
        let url: String

        init(upstream: String, rules: [String: Any]) throws {
            script = try InteropScript(
                script: "hostile_proxy.py",
                [upstream, String(decoding: try JSONSerialization.data(withJSONObject: rules), as: UTF8.self)]
            )
            url = "http://127.0.0.1:\(script.port)"
        }
    }

    /// Points a device's config directory at another server URL (as if its server had been taken over).
    static func point(_ d: Device, at url: String) throws {
        for file in ["device.json", "session.json"] where FileManager.default.fileExists(atPath: d.file(file)) {
            let data = try #require(FileManager.default.contents(atPath: d.file(file)))
            var object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            object["server"] = url
            try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: d.file(file)))
        }
    }

    @Test func aDirectoryAnsweredForAnotherNameIsRefused() throws {
        let (_, server, d) = try MessagingCLITests.setUp(["alice", "bob", "mallory"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        let mallory = d["mallory"]!
        let proxy = try Proxy(upstream: server.url, rules: ["alias": ["bob": "mallory"]])
        try Self.point(alice, at: proxy.url)
        let sent = try alice.cs("send", "--to", "bob", "for bob only")
        #expect(sent.status != 0 && !sent.text.contains("sent "), "\(sent.text)")
        #expect(
            sent.stderr.contains("asked the server for bob's devices and it answered with mallory's"),
            "\(sent.stderr)"
        )
        #expect(try mallory.cs("inbox").stderr.contains("no new messages"), "nothing was sealed to mallory")
        #expect(!(try alice.cs("contacts").text.contains("mallory")), "nothing pinned under either name")
    }

    /// Mallory writes to bob; the server relabels it as alice's and slips mallory's key into alice's key
    /// history as a key she "rotated" away. Bob pinned alice's real key: refused, nothing decrypted.
    @Test func aRelabelledMessageSignedByAKeyTheServerInsertedIsRefused() throws {
        let (_, server, d) = try MessagingCLITests.setUp(["alice", "bob", "mallory"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        let bob = d["bob"]!
        let mallory = d["mallory"]!
        let genuine = try MessagingCLITests.sentID(try alice.cs("send", "--to", "bob", "hello from alice"))
        _ = try bob.cs("inbox")
        let first = try bob.cs("read", genuine)
        #expect(first.status == 0 && first.text == "hello from alice", "\(first.stderr)")
        #expect(first.stderr.contains("first message from alice: pinned 1 device"), "\(first.stderr)")

        let forged = try MessagingCLITests.sentID(
            try mallory.cs("send", "--to", "bob", "alice here: wire the money to mallory")
        )
        let proxy = try Proxy(upstream: server.url, rules: ["relabel": ["mallory": "alice"]])
        try Self.point(bob, at: proxy.url)
        let inbox = try bob.cs("inbox")
        #expect(
            inbox.status == 0 && inbox.text.contains(forged) && inbox.text.contains("alice"),
            "the relabelled message arrives: \(inbox.text)"
        )
        let read = try bob.cs("read", forged, "--verbose")
        #expect(
            read.status != 0 && !read.text.contains("money") && !read.stderr.contains("Signature verified"),
            "\(read.text) \(read.stderr)"
        )
        #expect(
            read.stderr.contains("REFUSED") && read.stderr.contains("not a key you pinned for alice")
                && read.stderr.contains("was not decrypted"),
            "\(read.stderr)"
        )
        #expect(
            MessagingCLITests.fingerprints(read.stderr).count == 2,
            "names the signing key and the pinned one: \(read.stderr)"
        )
        // The genuine message still opens, through the lying server and offline alike.
        #expect(try bob.cs("read", genuine).text == "hello from alice")
        try Self.point(bob, at: "http://127.0.0.1:9")
        let offline = try bob.cs("read", genuine)
        #expect(
            offline.status == 0 && offline.text == "hello from alice",
            "opens offline with the pinned key: \(offline.stderr)"
        )
    }

    /// The same relabelling as the first message bob ever reads from "alice": trust on first use pins
    /// alice's current device, and mallory's key (only in the history) is refused.
    @Test func aRelabelledFirstMessageIsRefusedToo() throws {
        let (_, server, d) = try MessagingCLITests.setUp(["alice", "bob", "mallory"])
        defer { _ = server.signal(SIGTERM) }
        let bob = d["bob"]!
        let mallory = d["mallory"]!
        let forged = try MessagingCLITests.sentID(try mallory.cs("send", "--to", "bob", "alice here"))
        let proxy = try Proxy(upstream: server.url, rules: ["relabel": ["mallory": "alice"]])
        try Self.point(bob, at: proxy.url)
        _ = try bob.cs("inbox")
        let read = try bob.cs("read", forged)
        #expect(
            read.status != 0 && read.text.isEmpty && read.stderr.contains("not a key you pinned for alice"),
            "\(read.stderr)"
        )
    }

    /// Text the server chooses reaches the terminal escaped: it cannot move the cursor, retitle the
    /// window or clear the screen.
    @Test func serverTextIsEscapedOnTheTerminal() throws {
        let (t, server, d) = try MessagingCLITests.setUp(["alice"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        let evil = "\u{1b}]0;pwned\u{07}\u{1b}[2J\u{9b}31m"
        let proxy = try Proxy(upstream: server.url, rules: ["detail": evil])
        try t.write("wrong", Data("wrong horse\n".utf8))
        let login = try alice.cs("account", "login", "alice", "--password-file", t.path("wrong"), "--server", proxy.url)
        #expect(
            login.status != 0 && login.stderr.contains("\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{9b}31m"),
            "\(login.stderr)"
        )
        try Self.point(alice, at: proxy.url)
        let whoami = try alice.cs("account", "whoami")
        #expect(whoami.status == 0 && whoami.text.contains("\\u{1b}[2J"), "\(whoami.text) \(whoami.stderr)")
        for output in [login.text, login.stderr, whoami.text, whoami.stderr] {
            #expect(
                !output.unicodeScalars.contains { $0.value == 0x1b || $0.value == 0x07 || $0.value == 0x9b },
                "\(output)"
            )
        }
    }

    /// The number to match is the server's text too: a push sign-in through a lying server shows it
    /// escaped, on standard output and in the hint on standard error (issue 19, 2).
    @Test func theNumberToMatchIsEscapedOnTheTerminal() throws {
        let (t, server, alice, laptop) = try MFACLITests.setUp()
        defer { _ = server.signal(SIGTERM) }
        let phone = MFACLITests.Dir(t: t, name: "phone")
        #expect(try MFACLITests.pair(phone, try MFACLITests.pairingKey(alice).key, server: server).status == 0)
        let evil = "\u{1b}]0;pwned\u{07}\u{1b}[2J\u{9b}31m"
        let proxy = try Proxy(upstream: server.url, rules: ["number": evil])
        let login = try MFACLITests.Running(
            laptop,
            ["account", "login", "alice", "--password-file", t.path("pw"), "--server", proxy.url]
        )
        let shown = try login.wait(for: "^Number to match: (.*)$")
        #expect(shown == "\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{9b}31m", "\(shown)")
        let deadline = Date().addingTimeInterval(10)
        while !login.stderr.contains("waiting until"), Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let stopped = login.finish(timeout: 0)
        #expect(stopped.stderr.contains("--number \\u{1b}]0;pwned"), "\(stopped.stderr)")
        for output in [stopped.stdout, stopped.stderr] {
            #expect(
                !output.unicodeScalars.contains { $0.value == 0x1b || $0.value == 0x07 || $0.value == 0x9b },
                "\(output)"
            )
        }
    }

    /// A send's answer that names another message ID (here a path) is refused: it names a file here.
    @Test func aSentMessageIDThatIsNotTheEnvelopesIsRefused() throws {
        let (_, server, d) = try MessagingCLITests.setUp(["alice", "bob"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        _ = try MessagingCLITests.sentID(try alice.cs("send", "--to", "bob", "pins bob"))
        let pins = FileManager.default.contents(atPath: alice.file("contacts.json"))
        let proxy = try Proxy(upstream: server.url, rules: ["sent_id": "../contacts"])
        try Self.point(alice, at: proxy.url)
        let sent = try alice.cs("send", "--to", "bob", "again")
        #expect(sent.status != 0 && sent.stderr.contains("not its envelope's ID"), "\(sent.stderr)")
        let contacts = try alice.cs("contacts")
        #expect(
            FileManager.default.contents(atPath: alice.file("contacts.json")) == pins
                && contacts.text.contains("bob: 1 device")
        )
    }
}
