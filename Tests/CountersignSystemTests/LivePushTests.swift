import CountersignAPI
import CountersignClient
import CountersignCrypto
import CountersignTestSupport
import Foundation
import NIOWebSocket
import Synchronization
import Testing
import WSClient

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The push channel's `visibility` frame through a real `countersign serve` and the fake Web Push service
/// (docs/PROTOCOL.md §2.2): while bob's laptop holds a connection someone sees, its events go over the connection
/// and no push is sent for it; hidden, or closed, it is pushed again. Bob's phone, told of the same messages by the
/// same lookup, is the clock: when its push has come, the laptop's would have.
@Suite struct LivePushTests {
    final class Counter: Sendable {
        private let state = Mutex((n: 0, done: false))
        func next() -> Int {
            state.withLock { s in
                defer { s.n += 1 }
                return s.n
            }
        }
        func finished() { state.withLock { $0.done = true } }
        var done: Bool { state.withLock { $0.done } }
    }

    struct Received: Decodable {
        let name: String
        let payload: [String: String]?
    }

    static func get(_ url: String) async throws -> Data {
        try await URLSession.shared.data(from: URL(string: url)!).0
    }

    static func subscription(_ port: Int, _ name: String) async throws -> WebPushSubscription {
        let s = try JSONDecoder().decode(
            [String: String].self,
            from: try await get("http://127.0.0.1:\(port)/subscription?name=\(name)")
        )
        return WebPushSubscription(endpoint: s["endpoint"]!, keys: .init(p256dh: s["p256dh"]!, auth: s["auth"]!))
    }

    @Test func aSeenConnectionHoldsBackItsDevicesPushesAndAHiddenOrClosedOneDoesNot() async throws {
        let service = try InteropScript(script: "fake_push_service.py", [])
        let port = service.port
        let t = try CLI()
        let server = try ServeTests.Server(
            database: "sqlite:" + t.path("live.sqlite"),
            in: t.dir,
            environment: ["COUNTERSIGN_PUSH_ALLOWED_HOSTS": "127.0.0.1:\(port)"]
        )
        let alice = try await PushTests.Person("alice", server: server.url)
        let bob = try await PushTests.Person("bob", server: server.url)
        let phone = CountersignClient(server: URL(string: server.url)!)
        try await phone.signIn(username: "bob", password: "correct horse")
        let phoneKey = Identity.generate()
        let phoneID = try await phone.registerDevice(
            name: "bob-2",
            signing: phoneKey,
            encryptionKey: phoneKey.publicKey
        ).id
        try await phone.openDeviceSession(deviceID: phoneID, signing: phoneKey)
        try await bob.sdk.setWebPushSubscription(try await Self.subscription(port, "laptop"))
        try await phone.setWebPushSubscription(try await Self.subscription(port, "phone"))

        /// Sends one message to bob; when the phone's push for it has come, whether the laptop's came too (given
        /// a second more).
        @Sendable func probe(_ i: Int) async throws -> Bool {
            let id = try await alice.send("probe \(i)", to: ["bob"])
            func got(_ name: String) async throws -> Bool {
                let log = try JSONDecoder().decode(
                    [Received].self,
                    from: try await Self.get("http://127.0.0.1:\(port)/log")
                )
                return log.contains { $0.name == name && $0.payload?["id"] == id }
            }
            var deadline = ContinuousClock.now + .seconds(20)
            while try await !got("phone"), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(try await got("phone"), "the phone is always pushed")
            deadline = ContinuousClock.now + .seconds(1)
            while try await !got("laptop"), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            return try await got("laptop")
        }
        let probes = Counter()
        /// Probes until two in a row agree with `want`: marks are written a moment after a frame, so the first
        /// probes may see the state before; two agreeing say it holds.
        @Sendable func laptopPushed(_ want: Bool) async throws -> Bool {
            var agreeing = 0
            for _ in 0..<40 {
                agreeing = try await probe(probes.next()) == want ? agreeing + 1 : 0
                if agreeing == 2 { return true }
            }
            return false
        }

        #expect(try await laptopPushed(true), "no connection: pushed")
        let steps = try await PushTests.raw(
            server.url,
            first: PushTests.hello(try await bob.sdk.pushTicket().ticket),
            readFor: .seconds(240)
        ) { out in
            #expect(try await laptopPushed(false), "connected, and seen: no push")
            try await out.write(.text(#"{"type":"visibility","visible":false}"#))
            #expect(try await laptopPushed(true), "hidden: pushed, for its service worker to show")
            try await out.write(.text(#"{"type":"visibility","visible":true}"#))
            #expect(try await laptopPushed(false), "shown again: no push")
            try await out.close(.normalClosure, reason: nil)
            probes.finished()
        }
        #expect(probes.done, "the steps ran to their end within the connection's 240 s")
        #expect(steps.frames.first?.contains("\"ready\"") == true)
        #expect(try await laptopPushed(true), "closed: pushed again")

        // The SDK's channel says the same through PushVisibility: an app gone to the background with its socket
        // open is pushed; one that starts hidden says so on `ready`.
        let visibility = PushVisibility(visible: false)
        let channel = PushTests.Collector(bob.sdk.events(backoff: 0.1...0.5, visibility: visibility))
        #expect(await channel.wait { channel.caughtUp })
        #expect(try await laptopPushed(true), "the SDK's channel, started hidden: pushed")
        visibility.set(true)
        #expect(try await laptopPushed(false), "the app in the foreground: no push")
        visibility.set(false)
        #expect(try await laptopPushed(true), "the app in the background, its socket open: pushed")
        channel.stop()
        withExtendedLifetime(service) {}
    }
}
