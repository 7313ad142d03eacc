import CountersignTestSupport
import Foundation
import Testing

/// Several `countersign send` runs at once in one config directory, each to someone it writes to for the
/// first time: every run pins its recipient, and no run may lose another's pin (the pins are saved under
/// the config directory's file lock, over the file as it is then).
@Suite struct ConcurrentSendTests {
    /// Outputs of runs on several threads.
    final class Results: @unchecked Sendable {
        private let lock = NSLock()
        private var outputs: [Int: CLI.Output] = [:]
        func set(_ i: Int, _ output: CLI.Output) { lock.withLock { outputs[i] = output } }
        var all: [Int: CLI.Output] { lock.withLock { outputs } }
    }

    @Test func concurrentFirstSendsInOneDirectoryKeepEveryPin() throws {
        let recipients = (1...6).map { "rcpt\($0)" }
        let (_, server, d) = try MessagingCLITests.setUp(["alice"] + recipients)
        defer { _ = server.signal(SIGTERM) }
        let alice = d["alice"]!
        // Several rounds: each round is a fresh race for contacts.json.
        for round in 0..<5 {
            let names = recipients
            if round > 0 {
                // Forget the pins so every run is a first contact again.
                try FileManager.default.removeItem(atPath: alice.file("contacts.json"))
            }
            let results = Results()
            DispatchQueue.concurrentPerform(iterations: names.count) { i in
                let out =
                    (try? alice.cs("send", "--to", names[i], "hello \(names[i]) \(round)"))
                    ?? CLI.Output(status: -1, stdout: Data(), stderr: "could not run")
                results.set(i, out)
            }
            for (i, r) in results.all.sorted(by: { $0.key < $1.key }) {
                try #require(r.status == 0, "send to \(names[i]): \(r.stderr)")
                #expect(r.stderr.contains("first message to \(names[i]): pinned 1 device"), "\(r.stderr)")
            }
            let data = try #require(FileManager.default.contents(atPath: alice.file("contacts.json")))
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let contacts = try #require(object["contacts"] as? [String: Any])
            // Every recipient, and alice's own account (her other devices: none), which every send pins.
            #expect(
                Set(contacts.keys) == Set(names + ["alice"]),
                "round \(round): pins kept: \(contacts.keys.sorted())"
            )
            let listed = try alice.cs("contacts")
            for name in names { #expect(listed.text.contains("\(name): 1 device"), "\(listed.text)") }
        }
        #expect(MessagingCLITests.mode(alice.file("lock")) == 0o600)
    }
}
