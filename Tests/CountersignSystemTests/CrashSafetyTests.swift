import CountersignClient
import CountersignCrypto
import CountersignTestSupport
import Foundation
import Testing

/// SIGKILL *during* writes, on both backends: sends in flight from several clients, password changes, and
/// (in `CrashSafetyTests+Pairing.swift`, `+Approvals`, `+Passkeys`) pairings, push approvals and passkey
/// registrations. After a restart every write the server acknowledged is there, and nothing half-written is
/// visible (each stored message opens and verifies whole; exactly one of the old and new passwords works).
@Suite struct CrashSafetyTests {
    typealias Server = ServeTests.Server

    /// Limits that would otherwise refuse a test's own burst from 127.0.0.1: registrations, failed
    /// sign-ins (a denied push counts as one) and the lockout they lead to.
    static let roomy = [
        "COUNTERSIGN_REGISTRATIONS_PER_ADDRESS": "100", "COUNTERSIGN_SIGNIN_FAILURES_PER_ADDRESS": "1000",
        "COUNTERSIGN_LOCKOUT_DELAY_AFTER": "1000", "COUNTERSIGN_LOCKOUT_LOCK_AFTER": "1000",
    ]

    /// The generator of a test's choices and kill moment: COUNTERSIGN_CRASH_SEED replays a run; the seed
    /// is printed either way.
    static func seeded(_ test: String) -> SplitMix {
        let seed =
            ProcessInfo.processInfo.environment["COUNTERSIGN_CRASH_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64.max)
        print("\(test): COUNTERSIGN_CRASH_SEED=\(seed)")
        return SplitMix(seed: seed)
    }

    /// SIGKILLs `server` once `acknowledged()` reaches `count` and `jitter` more has passed: a moment
    /// inside a burst of writes (a burst that stalls is killed after 30 s anyway).
    static func kill(
        _ server: Server,
        after count: Int,
        jitter: Duration,
        _ acknowledged: () -> Int
    ) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while acknowledged() < count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        try await Task.sleep(for: jitter)
        #expect(server.signal(SIGKILL) != 0)
    }

    /// An account signed in, with one device and its device session (shared with `ServeTests`).
    static func person(_ name: String, _ server: Server) async throws -> (CountersignClient, Identity) {
        let sdk = CountersignClient(server: URL(string: server.url)!)
        try await sdk.register(username: name, password: "correct horse", name: "N", lastname: "L")
        try await sdk.signIn(username: name, password: "correct horse")
        let identity = Identity.generate()
        let device = try await sdk.registerDevice(name: "cli", signing: identity, encryptionKey: identity.publicKey)
        try await sdk.openDeviceSession(deviceID: device.id, signing: identity)
        return (sdk, identity)
    }

    @Test(arguments: ServeTests.backends)
    func sendsKilledMidFlightKeepEveryAcknowledgedMessageWhole(_ kind: String) async throws {
        let t = try CLI()
        let db = try ServeTests.database(kind, t)
        var server = try Server(database: db, in: t.dir, environment: ["COUNTERSIGN_SENDS_PER_ACCOUNT": "0"])
        let (alice, aliceKey) = try await Self.person("alice", server)
        let (bob, bobKey) = try await Self.person("bob", server)
        let acknowledged = Locked<Set<String>>([])
        let attempted = Locked(0)
        // Four clients send as fast as they can; the server is killed while they do.
        let senders = (0..<4).map { lane in
            Task {
                var i = 0
                while true {
                    attempted.withLock { $0 += 1 }
                    do {
                        let m = try await alice.sendMessage(
                            Array("lane \(lane) message \(i) ".utf8) + [UInt8](repeating: 0x61, count: 2000),
                            to: ["bob"],
                            from: "alice",
                            signing: aliceKey
                        )
                        acknowledged.withLock { _ = $0.insert(m.id) }
                    } catch {
                        return
                    }
                    i += 1
                }
            }
        }
        while acknowledged.withLock({ $0.count }) < 20 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(server.signal(SIGKILL) != 0)
        for sender in senders { await sender.value }
        let sent = acknowledged.withLock { $0 }
        let tried = attempted.withLock { $0 }
        #expect(tried > sent.count, "some sends were in flight when the server died")

        server = try Server(database: db, in: t.dir)
        defer { _ = server.signal(SIGTERM) }
        let reader = CountersignClient(server: URL(string: server.url)!, deviceToken: bob.deviceToken)
        var stored: [String: [UInt8]] = [:]
        var after: Int64 = 0
        while true {
            let page = try await reader.fetchMessages(after: after, limit: 100)
            for m in page.messages { stored[m.id] = m.envelope.bytes }
            guard let next = page.next else { break }
            after = next
        }
        #expect(sent.isSubset(of: Set(stored.keys)), "\(sent.subtracting(stored.keys).count) acknowledged sends lost")
        // Stored but unacknowledged (the answer lost with the process) is allowed; half-written is not.
        for (id, envelope) in stored {
            let opened = try MessageEnvelope(bytes: envelope).open(with: bobKey, from: aliceKey.publicKey)
            #expect(String(decoding: opened.plaintext.prefix(5), as: UTF8.self) == "lane ", "\(id)")
        }
    }

    @Test(arguments: ServeTests.backends)
    func passwordChangesKilledMidFlightLeaveExactlyOnePassword(_ kind: String) async throws {
        let t = try CLI()
        let db = try ServeTests.database(kind, t)
        var server = try Server(database: db, in: t.dir, environment: ["COUNTERSIGN_REGISTRATIONS_PER_ADDRESS": "100"])
        // Each account changes its password once; the server dies at a different moment for each round.
        for round in 0..<3 {
            var accounts: [CountersignClient] = []
            for i in 0..<4 {
                let sdk = CountersignClient(server: URL(string: server.url)!)
                try await sdk.register(username: "r\(round)u\(i)", password: "old password", name: "N", lastname: "L")
                try await sdk.signIn(username: "r\(round)u\(i)", password: "old password")
                accounts.append(sdk)
            }
            let changed = Locked<Set<Int>>([])
            let changes = accounts.enumerated().map { i, sdk in
                Task {
                    do {
                        try await sdk.changePassword(current: "old password", new: "new password")
                        changed.withLock { _ = $0.insert(i) }
                    } catch {}
                }
            }
            try await Task.sleep(for: .milliseconds(20 * round))
            _ = server.signal(SIGKILL)
            for change in changes { await change.value }
            server = try Server(database: db, in: t.dir, environment: ["COUNTERSIGN_REGISTRATIONS_PER_ADDRESS": "100"])
            for i in 0..<4 {
                let name = "r\(round)u\(i)"
                let old = try await ServeTests.request(
                    "POST",
                    server.url + "/v1/sessions",
                    json: ["username": name, "password": "old password"]
                ).0
                let new = try await ServeTests.request(
                    "POST",
                    server.url + "/v1/sessions",
                    json: ["username": name, "password": "new password"]
                ).0
                #expect([old, new].sorted() == [201, 401], "\(name): old \(old), new \(new)")
                if changed.withLock({ $0.contains(i) }) {
                    #expect(new == 201, "\(name): an acknowledged change was lost")
                }
            }
        }
        _ = server.signal(SIGTERM)
    }
}

/// A value shared by the tasks of a test (Mutex cannot be captured by an escaping closure).
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
