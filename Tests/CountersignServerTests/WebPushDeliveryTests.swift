import AsyncHTTPClient
import CountersignAPI
import CountersignClient
import CountersignCrypto
import CountersignTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import CountersignServer

/// Web Push from a live server to Tests/interop/fake_push_service.py (docs/PROTOCOL.md §2.2), on both backends:
/// PyJWT checks each push's VAPID token, http_ece opens each body with keys Python made; 404 and 410 remove
/// the subscription, 429 is tried again, a hanging push service holds up nobody else.
@Suite(.closesStorage) struct WebPushDeliveryTests {
    /// What the fake push service recorded of one push.
    struct Received: Decodable {
        let name: String
        let status: Int?
        let payload: [String: String]?
        let length: Int
        let ttl: String?
        let urgency: String?
        let topic: String?
        let encoding: String?
        let claims: Claims?
        let token: String?
        let error: String?
        struct Claims: Decodable {
            let aud: String
            let exp: Int
            let sub: String?
        }
    }

    static let http = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton)

    static func get(_ url: String) async throws -> Data {
        let response = try await http.execute(HTTPClientRequest(url: url), deadline: .now() + .seconds(10))
        return Data(buffer: try await response.body.collect(upTo: 1 << 22))
    }

    /// A subscription of the fake service at `port`, as a browser's `PushSubscription.toJSON()`.
    static func subscription(_ port: Int, _ name: String) async throws -> WebPushSubscription {
        let body = try await get("http://127.0.0.1:\(port)/subscription?name=\(name)")
        let s = try JSONDecoder().decode([String: String].self, from: body)
        return WebPushSubscription(endpoint: s["endpoint"]!, keys: .init(p256dh: s["p256dh"]!, auth: s["auth"]!))
    }

    static func log(_ port: Int) async throws -> [Received] {
        try JSONDecoder().decode([Received].self, from: try await get("http://127.0.0.1:\(port)/log"))
    }

    /// Polls the service's log until `done` holds, for up to `seconds`.
    static func waitFor(
        _ port: Int,
        seconds: Double = 30,
        _ done: ([Received]) -> Bool
    ) async throws -> [Received] {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while true {
            let entries = try await log(port)
            if done(entries) || ContinuousClock.now > deadline { return entries }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    @Test(arguments: Backend.available)
    func messagesReachThePushServiceSealedSignedAndOfOneLength(_ backend: Backend) async throws {
        let service = try InteropScript(script: "fake_push_service.py", [])
        defer { withExtendedLifetime(service) {} }
        let port = service.port
        // The push service checks exp against its own clock: the server's is the real time here.
        try await withLiveServer(
            backend,
            clock: ManualClock(Date()),
            configure: {
                $0.pushAllowedHosts = ["127.0.0.1:\(port)"]
                $0.vapidSubject = "mailto:ops@example.com"
            }
        ) { server, h in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            let bobPhone = try await Person.addDevice("bob", sdk: bob.sdk, name: "phone")
            let info = try await bob.sdk.setWebPushSubscription(try await Self.subscription(port, "bob-laptop"))
            #expect(info.channel == "webpush" && info.origin == "http://127.0.0.1:\(port)")
            try await bobPhone.sdk.setWebPushSubscription(try await Self.subscription(port, "bob-phone"))
            // Alice's own device is subscribed too: her copy of what she sends is not news to her.
            try await alice.sdk.setWebPushSubscription(try await Self.subscription(port, "alice"))

            let short = try await alice.send("hi", to: ["bob"])
            let long = try await alice.send(String(repeating: "a long message ", count: 500), to: ["bob"])
            let entries = try await Self.waitFor(port) { $0.count >= 4 }
            try await Task.sleep(for: .milliseconds(500))
            let all = try await Self.log(port)
            #expect(all.count == 4, "one push per message per recipient device, none to the sender: \(all.map(\.name))")
            #expect(all.allSatisfy { $0.error == nil }, "\(all.compactMap(\.error))")
            #expect(Set(all.map(\.name)) == ["bob-laptop", "bob-phone"])
            let payloads = Set(all.compactMap(\.payload))
            #expect(payloads == [["kind": "message", "id": short.id], ["kind": "message", "id": long.id]])
            // The length says nothing: every body is one record padded to the same size.
            #expect(Set(all.map(\.length)).count == 1, "\(all.map(\.length))")
            for e in all {
                #expect(e.encoding == "aes128gcm" && e.urgency == "normal" && e.ttl == "86400" && e.topic == nil)
                let claims = try #require(e.claims)
                #expect(claims.aud == "http://127.0.0.1:\(port)" && claims.sub == "mailto:ops@example.com")
                let now = Int(h.clock.now().timeIntervalSince1970)
                #expect(claims.exp == now + 12 * 3600 || claims.exp == now + 12 * 3600 - 1)
            }
            // The VAPID token is made once for the push service, not per push.
            #expect(Set(all.compactMap(\.token)).count == 1)

            // A burst: the service's workers take turns, and each push still goes to its own subscription (a
            // worker once posted every job it took to the address of the first it started with).
            let burst = try await withThrowingTaskGroup(of: String.self) { tasks in
                for i in 0..<24 { tasks.addTask { try await alice.send("burst \(i)", to: ["bob"]).id } }
                return try await tasks.reduce(into: Set<String>()) { $0.insert($1) }
            }
            let after = try await Self.waitFor(port) { $0.count >= 4 + 48 }
            #expect(after.count == 4 + 48)
            #expect(
                after.allSatisfy { $0.error == nil },
                "pushes that do not open at their address: \(after.compactMap(\.error))"
            )
            for name in ["bob-laptop", "bob-phone"] {
                let ids = Set(after.dropFirst(4).filter { $0.name == name }.compactMap { $0.payload?["id"] })
                #expect(ids == burst, "\(name) got \(ids.count) of the 24")
            }
        }
    }

    @Test(arguments: Backend.available)
    func goneAndMissingSubscriptionsAreDroppedAndBusyOnesTriedAgain(_ backend: Backend) async throws {
        let service = try InteropScript(script: "fake_push_service.py", [])
        defer { withExtendedLifetime(service) {} }
        let port = service.port
        try await withLiveServer(
            backend,
            clock: ManualClock(Date()),
            configure: { $0.pushAllowedHosts = ["127.0.0.1:\(port)"] }
        ) { server, h in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            let phone = try await Person.addDevice("bob", sdk: bob.sdk, name: "phone")
            let tablet = try await Person.addDevice("bob", sdk: bob.sdk, name: "tablet")
            try await bob.sdk.setWebPushSubscription(try await Self.subscription(port, "gone-laptop"))
            try await phone.sdk.setWebPushSubscription(try await Self.subscription(port, "missing-phone"))
            try await tablet.sdk.setWebPushSubscription(try await Self.subscription(port, "flaky-tablet"))

            _ = try await alice.send("one", to: ["bob"])
            // 410 and 404 once each; 429 (Retry-After: 1) then 201.
            let entries = try await Self.waitFor(port) { e in e.filter { $0.name == "flaky-tablet" }.count >= 2 }
            #expect(entries.filter { $0.name == "flaky-tablet" }.map(\.status) == [429, 201])
            // The subscriptions the push service said are gone are deleted; the busy one stays.
            var left: [PushTargetInfo?] = []
            for _ in 0..<50 {
                left = [try await bob.sdk.pushTarget(), try await phone.sdk.pushTarget()]
                if left.allSatisfy({ $0 == nil }) { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(left.allSatisfy { $0 == nil })
            #expect(try await tablet.sdk.pushTarget() != nil)

            _ = try await alice.send("two", to: ["bob"])
            let after = try await Self.waitFor(port) { e in e.filter { $0.name == "flaky-tablet" }.count >= 3 }
            try await Task.sleep(for: .milliseconds(500))
            #expect(after.filter { $0.name == "gone-laptop" }.count == 1, "nothing more sent to a gone subscription")
            #expect(after.filter { $0.name == "missing-phone" }.count == 1)
            #expect(try await Self.log(port).filter { $0.name == "flaky-tablet" }.map(\.status) == [429, 201, 201])
            _ = h
        }
    }

    @Test(arguments: Backend.available)
    func aHangingPushServiceHoldsUpNoSendAndNoOtherService(_ backend: Backend) async throws {
        let hanging = try InteropScript(script: "fake_push_service.py", [])
        let healthy = try InteropScript(script: "fake_push_service.py", [])
        defer { withExtendedLifetime((hanging, healthy)) {} }
        let (hangingPort, healthyPort) = (hanging.port, healthy.port)
        try await withLiveServer(
            backend,
            clock: ManualClock(Date()),
            configure: { $0.pushAllowedHosts = ["127.0.0.1:\(hangingPort)", "127.0.0.1:\(healthyPort)"] }
        ) { server, _ in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            let carol = try await Person.make("carol", server: server)
            try await bob.sdk.setWebPushSubscription(try await Self.subscription(hangingPort, "hang-bob"))
            try await carol.sdk.setWebPushSubscription(try await Self.subscription(healthyPort, "carol"))
            for i in 0..<40 {
                let started = ContinuousClock.now
                _ = try await alice.send("to bob \(i)", to: ["bob"])
                // A send never waits for a push: well under the push's own 15-second deadline.
                #expect(ContinuousClock.now - started < .seconds(5))
            }
            _ = try await alice.send("to carol", to: ["carol"])
            let got = try await Self.waitFor(healthyPort, seconds: 20) { !$0.isEmpty }
            #expect(got.map(\.name) == ["carol"], "the healthy push service is told while the other hangs")
        }
    }

    /// The SSRF rule at send time: the connection goes to the address the name was checked at (`pinned`), and a
    /// name that resolves to a private address by the time of the send is not requested at all.
    @Test(arguments: Backend.available)
    func theServerConnectsToTheAddressItCheckedAndNotToOneThatTurnedPrivate(_ backend: Backend) async throws {
        let answers = Mutex<[String: [[UInt8]]]>([
            "push.example.net": [TrustedProxies.bytes("8.8.4.4")!, TrustedProxies.bytes("8.8.8.8")!],
            "rebind.example.net": [TrustedProxies.bytes("1.1.1.1")!],
        ])
        let requests = Mutex<[WebPushSender.Request]>([])
        try await withLiveServer(
            backend,
            pushTransport: { request in
                requests.withLock { $0.append(request) }
                return .init(status: 201)
            },
            pushResolver: { host in answers.withLock { $0[host] ?? [] } }
        ) { server, _ in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            let carol = try await Person.make("carol", server: server)
            try await bob.sdk.setWebPushSubscription(PushTargetTests.subscription("https://push.example.net/bob"))
            try await carol.sdk.setWebPushSubscription(PushTargetTests.subscription("https://rebind.example.net/c"))
            // Between the check and the send, the name turns to a private address (DNS rebinding).
            answers.withLock { $0["rebind.example.net"] = [TrustedProxies.bytes("10.0.0.5")!] }
            _ = try await alice.send("to bob", to: ["bob"])
            _ = try await alice.send("to carol", to: ["carol"])
            for _ in 0..<100 where requests.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(50)) }
            try await Task.sleep(for: .milliseconds(500))
            let sent = requests.withLock { $0 }
            #expect(sent.map(\.host) == ["push.example.net"], "nothing to the name that turned private")
            #expect(sent.first?.pinned == "8.8.4.4", "connected to the address checked, not the name")
            #expect(sent.first?.url.absoluteString == "https://push.example.net/bob")
        }
    }
}

/// Two nodes over one PostgreSQL database (docs/PROTOCOL.md §2.2): a message committed on one node is pushed by
/// that node alone, and a delayed one, come due while both look for due messages at once, by the one that
/// claimed it: one event, one notification, however many nodes.
@Suite(.closesStorage) struct TwoNodePushTests {
    @Test func oneEventIsOneNotificationAcrossTwoNodes() async throws {
        guard Backend.available.contains(.postgres) else { return }
        let location = try Backend.postgres.freshLocation()
        let pushes = Mutex<[(node: String, request: WebPushSender.Request)]>([])
        let resolver: WebPushSender.Resolver = { _ in [TrustedProxies.bytes("8.8.4.4")!] }
        func node(_ name: String) -> WebPushSender.Transport {
            { request in
                pushes.withLock { $0.append((name, request)) }
                return .init(status: 201)
            }
        }
        let a = try await Harness.make(.postgres, location: location, pushTransport: node("A"), pushResolver: resolver)
        let b = try await Harness.make(.postgres, location: location, pushTransport: node("B"), pushResolver: resolver)
        let appA = Application(router: try a.router(), configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        let appB = Application(router: try b.router(), configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await appA.test(.live) { clientA in
            try await appB.test(.live) { clientB in
                let serverA = URL(string: "http://127.0.0.1:\(clientA.port!)")!
                let serverB = URL(string: "http://127.0.0.1:\(clientB.port!)")!
                let alice = try await Person.make("alice", server: serverA)
                let bob = try await Person.make("bob", server: serverB)
                try await bob.sdk.setWebPushSubscription(PushTargetTests.subscription("https://push.example.net/bob"))

                let now = try await alice.send("now", to: ["bob"])
                for _ in 0..<100 where pushes.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(50)) }
                try await Task.sleep(for: .seconds(1))
                #expect(pushes.withLock { $0.map(\.node) } == ["A"], "pushed by the node that committed it, once")
                _ = now

                _ = try await alice.send("later", to: ["bob"], after: 60)
                a.clock.advance(120)
                b.clock.advance(120)
                // Both nodes look for due messages at the same moment.
                async let fromA = a.services.push.fireDue()
                async let fromB = b.services.push.fireDue()
                let fired = try await fromA + fromB
                #expect(fired == 1, "claimed by one node")
                for _ in 0..<100 where pushes.withLock({ $0.count < 2 }) {
                    try await Task.sleep(for: .milliseconds(50))
                }
                try await Task.sleep(for: .seconds(1))
                #expect(pushes.withLock { $0.count } == 2, "one notification for the delayed message")
            }
        }
        await b.close()
        await a.close()
    }
}
