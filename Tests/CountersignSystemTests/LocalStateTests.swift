import CountersignTestSupport
import Foundation
import Testing

/// The CLI's local state against what happens around it (issue 19.13, 19.17, 19.18): a password change
/// under a running `watch`, a directory holding another account's device, unreadable or unwritable
/// directories, a damaged stored message, a server that is gone, a revoked device's kept messages.
@Suite struct LocalStateTests {
    typealias Device = MessagingCLITests.Device

    /// `countersign ARGS` in `d`'s directory as an unprivileged user: as root (CI), through setpriv as
    /// nobody, since root reads and writes whatever the modes say.
    static func unprivileged(_ d: Device, _ args: [String]) throws -> CLI.Output {
        let command = ["COUNTERSIGN_CONFIG_DIR=\(d.dir)", CLI.binary] + args
        guard getuid() == 0 else { return try d.t.run("/usr/bin/env", command) }
        return try d.t.run(
            "/usr/bin/setpriv",
            ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/env"] + command
        )
    }

    /// Hands `path` (recursively) to the user `unprivileged` runs as.
    static func handOver(_ path: String) throws {
        guard getuid() == 0 else { return }
        try Spawned("/bin/chown", ["-R", "65534:65534", path]).wait()
    }

    /// A background `countersign watch` in `d`'s directory, its output in files; killed when dropped.
    final class Watch {
        let process: Spawned
        let out: String, err: String

        init(_ d: Device, environment: [String: String] = [:]) throws {
            out = d.t.path("watch-\(d.name).out")
            err = d.t.path("watch-\(d.name).err")
            process = try Spawned(
                CLI.binary,
                ["watch", "--json"],
                environment: ["COUNTERSIGN_CONFIG_DIR": d.dir].merging(environment) { $1 },
                stdout: .file(out),
                stderr: .file(err)
            )
        }

        deinit {
            if process.isRunning {
                process.signal(SIGKILL)
                process.wait()
            }
        }

        var stdout: String { String(decoding: FileManager.default.contents(atPath: out) ?? Data(), as: UTF8.self) }
        var stderr: String { String(decoding: FileManager.default.contents(atPath: err) ?? Data(), as: UTF8.self) }

        /// Waits up to `seconds` for `condition`; false if it never held.
        func wait(_ seconds: Double, until condition: () -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while !condition() {
                if Date() > deadline { return false }
                Thread.sleep(forTimeInterval: 0.1)
            }
            return true
        }
    }

    /// Issue 19.13: a password change ends the account's sessions, device sessions included, and the
    /// server closes the push channel (4403). `watch` opens a new device session with its key and keeps
    /// going; only a revoked device ends it.
    @Test func watchCarriesOnAfterAPasswordChangeAndStopsWhenRevoked() throws {
        let (t, server, d) = try MessagingCLITests.setUp(["alice", "bob"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        let bob = d["bob"]!
        let watch = try Watch(alice)
        #expect(watch.wait(15) { watch.stderr.contains("connected") }, "\(watch.stderr)")

        try t.write("pw2", Data("a brand new password\n".utf8))
        let passwd = try alice.cs(
            "account",
            "passwd",
            "--password-file",
            t.path("pw"),
            "--new-password-file",
            t.path("pw2")
        )
        try #require(passwd.status == 0, "\(passwd.stderr)")
        // The channel closes, a new device session opens, and it connects again.
        #expect(
            watch.wait(15) { watch.stderr.components(separatedBy: "connected; waiting").count >= 3 },
            "\(watch.stderr)"
        )
        #expect(watch.process.isRunning, "watch is still running: \(watch.stderr)")
        let id = try MessagingCLITests.sentID(try bob.cs("send", "--to", "alice", "after the password change"))
        #expect(watch.wait(15) { watch.stdout.contains(id) }, "the message arrives: \(watch.stdout) \(watch.stderr)")

        // Revoked (from the account, signed in again): the renewal is refused, and watch ends saying so.
        let login = try alice.cs("account", "login", "alice", "--password-file", t.path("pw2"), "--server", server.url)
        try #require(login.status == 0, "\(login.stderr)")
        let revoke = try alice.cs("device", "revoke", try #require(alice.deviceID))
        #expect(revoke.status == 0, "\(revoke.stderr)")
        #expect(watch.wait(15) { !watch.process.isRunning }, "watch ends for a revoked device: \(watch.stderr)")
        #expect(watch.process.wait() != 0 && watch.stderr.contains("has been revoked"), "\(watch.stderr)")
    }

    /// Issue 19.17: signed in as bob in a directory that holds alice's device, `device revoke <alice's
    /// device>` told "that was this device" and wiped it while it stayed active. Nothing here may change.
    @Test func revokingInADirectoryOfAnotherAccountLeavesItsDeviceAlone() throws {
        let (t, server, d) = try MessagingCLITests.setUp(["alice", "bob"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        let bob = d["bob"]!
        let aliceID = try #require(alice.deviceID)
        let before = FileManager.default.contents(atPath: alice.file("device.json"))
        try MessagingCLITests.login(alice, "bob", server)
        let revoke = try alice.cs("device", "revoke", aliceID)
        #expect(revoke.status != 0 && !revoke.text.contains("that was this device"), "\(revoke.text) \(revoke.stderr)")
        #expect(
            revoke.stderr.contains("is this directory's device of alice") && revoke.stderr.contains("signed in as bob")
                && revoke.stderr.contains("nothing here was changed"),
            "\(revoke.stderr)"
        )
        #expect(FileManager.default.contents(atPath: alice.file("device.json")) == before, "device.json untouched")
        #expect(FileManager.default.fileExists(atPath: alice.file("device-session.json")))
        // Alice's device still works from here.
        let id = try MessagingCLITests.sentID(try bob.cs("send", "--to", "alice", "still yours"))
        let inbox = try alice.cs("inbox")
        #expect(inbox.status == 0 && inbox.text.contains(id), "\(inbox.stderr)")
        #expect(try alice.cs("read", id).text == "still yours")
        _ = t
    }

    /// Issue 19.18: a config directory that cannot be read said "not signed in"; it is named, with why.
    @Test func anUnreadableConfigDirectoryIsNotTakenForNoSession() throws {
        let (_, server, d) = try MessagingCLITests.setUp(["alice"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        try Self.handOver(alice.dir)
        #expect(chmod(alice.dir, 0) == 0)
        defer { chmod(alice.dir, 0o700) }
        for args in [["account", "whoami"], ["inbox"], ["device", "list"]] {
            let r = try Self.unprivileged(alice, args)
            #expect(
                r.status != 0 && r.stderr.contains("cannot read \(alice.dir)/")
                    && r.stderr.contains("Permission denied"),
                "\(args): \(r.stderr)"
            )
            #expect(!r.stderr.contains("not signed in") && !r.stderr.contains("no device"), "\(args): \(r.stderr)")
        }
    }

    /// Issue 19.18: a config directory that cannot be created (read-only parent) failed after the sign-in
    /// with a raw `NSCocoaErrorDomain Code=513`, leaving the new session open on the server. Now nothing
    /// is signed in, and the error names the directory and what to do.
    @Test func anUnwritableConfigDirectoryLeavesNoSessionOnTheServer() throws {
        let (t, server, d) = try MessagingCLITests.setUp(["alice"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        let parent = t.path("read-only")
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        try Self.handOver(parent)
        #expect(chmod(parent, 0o555) == 0)
        let nested = Device(t: t, name: "read-only/countersign")
        let login = try Self.unprivileged(
            nested,
            ["account", "login", "alice", "--password-file", t.path("pw"), "--server", server.url]
        )
        #expect(
            login.status != 0 && login.stderr.contains("cannot create \(nested.dir): Permission denied")
                && login.stderr.contains("COUNTERSIGN_CONFIG_DIR"),
            "\(login.stderr)"
        )
        #expect(
            !login.stderr.contains("NSCocoaErrorDomain") && !login.text.contains("signed in as"),
            "\(login.text) \(login.stderr)"
        )
        // The account's only live session is the one setUp made (sign-ins minus sign-outs).
        let audit = try alice.cs("account", "audit", "--limit", "100")
        let lines = audit.text.split(separator: "\n")
        let signIns = lines.filter { $0.contains(" sign-in ") && $0.contains(" success") }.count
        let signOuts = lines.filter { $0.contains(" sign-out ") }.count
        #expect(audit.status == 0 && signIns - signOuts == 1, "\(audit.text)")
    }

    /// Issue 19.18: one damaged messages/*.json blocked `inbox` and `outbox`; it is skipped with a warning
    /// naming it, and a fresh copy from the server replaces it. A damaged session.json is named too.
    @Test func aDamagedStoredMessageIsSkippedWithAWarning() throws {
        let (_, server, d) = try MessagingCLITests.setUp(["alice", "bob"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        let bob = d["bob"]!
        let first = try MessagingCLITests.sentID(try alice.cs("send", "--to", "bob", "one"))
        let second = try MessagingCLITests.sentID(try alice.cs("send", "--to", "bob", "two"))
        #expect(try bob.cs("inbox").status == 0)
        #expect(try alice.cs("outbox").status == 0)
        for dir in [bob, alice] {
            try Data("{ not json".utf8).write(to: URL(fileURLWithPath: dir.file("messages/\(first).json")))
        }
        let inbox = try bob.cs("inbox")
        #expect(
            inbox.status == 0 && inbox.text.contains(second) && !inbox.text.contains(first),
            "\(inbox.text) \(inbox.stderr)"
        )
        #expect(
            inbox.stderr.contains("warning: skipped") && inbox.stderr.contains("messages/\(first).json is damaged"),
            "\(inbox.stderr)"
        )
        let outbox = try alice.cs("outbox")
        #expect(
            outbox.status == 0 && outbox.text.contains(second)
                && outbox.stderr.contains("messages/\(first).json is damaged"),
            "\(outbox.stderr)"
        )
        #expect(try bob.cs("read", second).text == "two")
        // A copy the server still queues replaces the damaged file.
        let third = try MessagingCLITests.sentID(try alice.cs("send", "--to", "bob", "three"))
        try Data("{ not json".utf8).write(to: URL(fileURLWithPath: bob.file("messages/\(third).json")))
        let again = try bob.cs("inbox")
        #expect(
            again.status == 0 && again.text.contains(third) && again.stderr.contains("replacing"),
            "\(again.stderr)"
        )
        #expect(try bob.cs("read", third).text == "three")
        // A damaged session.json is named as such (not "not signed in"), and stops no message command.
        try Data("{ not json".utf8).write(to: URL(fileURLWithPath: bob.file("session.json")))
        let whoami = try bob.cs("account", "whoami")
        #expect(
            whoami.status != 0 && whoami.stderr.contains("session.json is damaged")
                && !whoami.stderr.contains("not signed in"),
            "\(whoami.stderr)"
        )
        #expect(try bob.cs("inbox").status == 0)
    }

    /// Issue 19.18: `read` opens a kept message with the pinned key when the server is gone or does not
    /// answer (a deadline, then the pins), and a revoked directory still opens the messages it kept.
    @Test func readOpensKeptMessagesOfflineAndAfterRevocation() throws {
        let (t, server, d) = try MessagingCLITests.setUp(["alice", "bob"])
        let alice = d["alice"]!
        let bob = d["bob"]!
        let id = try MessagingCLITests.sentID(try alice.cs("send", "--to", "bob", "kept"))
        let mine = try MessagingCLITests.sentID(try bob.cs("send", "--to", "alice", "mine"))
        #expect(try bob.cs("inbox").status == 0)
        #expect(try bob.cs("read", id).text == "kept", "pins alice")
        #expect(try alice.cs("inbox").status == 0)
        #expect(try alice.cs("read", mine).text == "mine", "pins bob")

        // Revoked from another directory of bob's: read still works, and the other commands say it was revoked.
        let phone = Device(t: t, name: "bob-phone")
        try MessagingCLITests.login(phone, "bob", server)
        let revoke = try phone.cs("device", "revoke", try #require(bob.deviceID))
        #expect(revoke.status == 0, "\(revoke.stderr)")
        // The first command after it is a read: it finds out (renewing the session), marks the device, and opens the message.
        let first = try bob.cs("read", id)
        #expect(
            first.status == 0 && first.text == "kept" && first.stderr.contains("has been revoked"),
            "\(first.stderr)"
        )
        let inbox = try bob.cs("inbox")
        #expect(
            inbox.status != 0 && inbox.stderr.contains("was revoked") && inbox.stderr.contains("countersign read ID"),
            "\(inbox.stderr)"
        )
        let again = try bob.cs("send", "--to", "alice", "x")
        #expect(
            again.status != 0 && again.stderr.contains("was revoked")
                && again.stderr.contains("countersign device init"),
            "\(again.stderr)"
        )
        for (message, text) in [(id, "kept"), (mine, "mine")] {
            let read = try bob.cs("read", message)
            #expect(read.status == 0 && read.text == text, "a revoked directory reads what it kept: \(read.stderr)")
        }

        // Alice's directory with the server stopped, then pointed at one that never answers.
        _ = server.signal(SIGTERM)
        let offline = try alice.cs("read", mine)
        #expect(offline.status == 0 && offline.text == "mine", "\(offline.stderr)")
        let silent = try ServerDeadlineTests.BrokenServer("silent")
        try HostileServerTests.point(alice, at: "http://127.0.0.1:\(silent.port)")
        let start = Date()
        let slow = try alice.cs("read", mine)
        #expect(slow.status == 0 && slow.text == "mine" && slow.stderr.contains("timed out"), "\(slow.stderr)")
        #expect(Date().timeIntervalSince(start) < 30)
    }

    /// Behind a proxy (http_proxy), `watch` works: its HTTP calls and its push channel's WebSocket both
    /// go through the proxy.
    @Test func watchGoesThroughTheProxy() throws {
        let (t, server, d) = try MessagingCLITests.setUp(["alice", "bob"])
        defer { _ = server.signal(SIGTERM) }
        let log = t.path("proxy.log")
        let proxy = try ServerDeadlineTests.BrokenServer(script: "connect_proxy.py", [log])
        let watch = try Watch(
            d["alice"]!,
            environment: ["http_proxy": "http://127.0.0.1:\(proxy.port)", "no_proxy": ""]
        )
        #expect(watch.wait(15) { watch.stderr.contains("connected") }, "\(watch.stderr)")
        let id = try MessagingCLITests.sentID(try d["bob"]!.cs("send", "--to", "alice", "through the proxy"))
        #expect(watch.wait(15) { watch.stdout.contains(id) }, "\(watch.stdout) \(watch.stderr)")
        let tunnels = String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self)
        #expect(tunnels.contains("> GET /v1/push HTTP/1.1") && tunnels.contains("> POST /v1/"), "\(tunnels)")
    }
}
