import CountersignTestSupport
import Foundation
import Testing

/// `countersign agent` (issue 19, 20): every message command on a passphrase-protected device needed
/// --passphrase-file. The agent holds the unlocked keys for a bounded time, for its own user only.
@Suite struct AgentTests {
    typealias Dir = MessagingCLITests.Device

    /// `send` with no terminal and no --passphrase-file: only an agent can unlock the key.
    static func sendWithoutTerminal(_ d: Dir, _ text: String) throws -> CLI.Output {
        try d.t.run(
            "/usr/bin/setsid",
            ["-w", "/usr/bin/env", "COUNTERSIGN_CONFIG_DIR=\(d.dir)", CLI.binary, "send", "--to", "bob", text]
        )
    }

    static func waitFor(_ what: String, timeout: TimeInterval = 20, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            guard Date() < deadline else {
                throw CocoaError(
                    .fileReadUnknown,
                    userInfo: [NSLocalizedDescriptionKey: "timed out waiting for \(what)"]
                )
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    @Test func theAgentHoldsTheKeyForABoundedTime() throws {
        let (t, server, d) = try MessagingCLITests.setUp(["alice", "bob"], passphrase: ["alice"])
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        let refused = try Self.sendWithoutTerminal(alice, "no agent")
        #expect(
            refused.status != 0 && refused.stderr.contains("no terminal to ask for the passphrase"),
            "\(refused.stderr)"
        )
        let filesBefore = try FileManager.default.contentsOfDirectory(atPath: alice.dir).sorted()

        // --idle long enough for a loaded machine to run the commands below within it.
        let agent = try MFACLITests.Running(alice, ["agent", "--idle", "10s", "--passphrase-file", t.path("pass")])
        defer { agent.process.signal(SIGKILL) }
        try Self.waitFor("the agent") { agent.stderr.contains("agent holding 1 key") }
        #expect(MessagingCLITests.mode(alice.file("agent.sock")) == 0o600)
        let status = try alice.cs("agent", "status")
        #expect(status.status == 0 && status.text.contains("agent holds 1 key"), "\(status.text) \(status.stderr)")
        let sent = try Self.sendWithoutTerminal(alice, "through the agent")
        #expect(sent.status == 0 && sent.text.hasPrefix("sent "), "\(sent.text) \(sent.stderr)")
        // Nothing written beside the socket: no key, no passphrase (the pins' lock file is empty).
        let filesDuring = try FileManager.default.contentsOfDirectory(atPath: alice.dir).sorted()
        #expect(
            Set(filesDuring).subtracting(filesBefore).subtracting(["messages", "contacts.json", "lock"])
                == ["agent.sock"],
            "\(filesDuring)"
        )

        // Idle for longer than --idle: it exits, removes its socket, and the key is asked for again.
        let ended = agent.finish(timeout: 30)
        #expect(ended.status == 0 && ended.stderr.contains("agent stopped"), "\(ended)")
        #expect(!FileManager.default.fileExists(atPath: alice.file("agent.sock")))
        #expect(try Self.sendWithoutTerminal(alice, "agent gone").status != 0)

        // `agent stop` ends one at once.
        let second = try MFACLITests.Running(alice, ["agent", "--passphrase-file", t.path("pass")])
        defer { second.process.signal(SIGKILL) }
        try Self.waitFor("the second agent") { second.stderr.contains("agent holding") }
        #expect(try alice.cs("agent", "stop").text == "agent stopped\n")
        #expect(second.finish(timeout: 5).status == 0)
        let none = try alice.cs("agent", "status")
        #expect(none.status != 0 && none.stderr.contains("no agent runs"), "\(none.stderr)")
        let bad = try alice.cs("agent", "--idle", "2h", "--max", "1h")
        #expect(bad.status == 64 && bad.stderr.contains("--idle (2h) is longer than --max (1h)"), "\(bad.stderr)")
    }
}
