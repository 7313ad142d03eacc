import CountersignAPI
import CountersignClient
import Foundation
import Hummingbird
import HummingbirdTesting
import SQLKit
import Synchronization
import Testing

@testable import CountersignServer

/// A device someone sees through a live push connection gets its events there and no push notification
/// (docs/PROTOCOL.md §2.2); one hidden, closed, or whose mark ran out (a node that stopped) is pushed again. The
/// mark is in the database, so another node's commit sees it. Absence is checked against a second device of the
/// same account, told of the same message by the same lookup: when its push has come, the first one's would have.
@Suite(.closesStorage) struct LivePresenceTests {
    final class Pushes: Sendable {
        let urls = Mutex<[String]>([])
        func count(_ path: String) -> Int { urls.withLock { $0.count { $0.hasSuffix(path) } } }
        var transport: WebPushSender.Transport {
            { request in
                self.urls.withLock { $0.append(request.url.absoluteString) }
                return .init(status: 201)
            }
        }
    }

    static let resolver: WebPushSender.Resolver = { _ in [TrustedProxies.bytes("8.8.4.4")!] }

    /// The device's mark, in ms (0: none).
    static func mark(_ storage: any ServerStorage, _ device: String) async throws -> Int64 {
        try await storage.sql.raw("SELECT live_until FROM push_targets WHERE device_id = \(bind: device)").first()?
            .decode(column: "live_until", as: Int64.self) ?? -1
    }

    static func until(_ what: String, _ done: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(90)
        while try await !done() {
            guard ContinuousClock.now < deadline else {
                Issue.record("\(what): not within 90 s")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Sends one message to bob and waits for the phone's push: then whether the laptop got one for it (waited
    /// for when `expected`, given a second to come when not).
    static func laptopPushed(
        for send: () async throws -> Void,
        _ pushes: Pushes,
        expected: Bool
    ) async throws -> Bool {
        let (phone, laptop) = (pushes.count("/phone"), pushes.count("/laptop"))
        try await send()
        try await until("the phone's push") { pushes.count("/phone") > phone }
        if expected {
            let deadline = ContinuousClock.now + .seconds(90)
            while pushes.count("/laptop") == laptop, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
        } else {
            try await Task.sleep(for: .seconds(1))
        }
        return pushes.count("/laptop") > laptop
    }

    @Test(arguments: Backend.available)
    func aSeenDeviceIsNotPushedAndAHiddenClosedOrRunOutOneIs(_ backend: Backend) async throws {
        let pushes = Pushes()
        try await withLiveServer(backend, pushTransport: pushes.transport, pushResolver: Self.resolver) { server, h in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            let phone = try await Person.addDevice("bob", sdk: bob.sdk, name: "phone")
            try await bob.sdk.setWebPushSubscription(PushTargetTests.subscription("https://push.example.net/laptop"))
            try await phone.sdk.setWebPushSubscription(PushTargetTests.subscription("https://push.example.net/phone"))
            let notifications = h.services.notifications
            let laptop = bob.device.id
            let send = { _ = try await alice.send("hello", to: ["bob"]) }

            #expect(try await Self.laptopPushed(for: send, pushes, expected: true), "not connected: pushed")

            notifications.connection(laptop, seen: true)
            try await Self.until("marked") { try await Self.mark(h.storage, laptop) > h.clock.now().ms }
            #expect(try await Self.mark(h.storage, phone.device.id) == 0)
            #expect(try await !Self.laptopPushed(for: send, pushes, expected: false), "seen: over its connection only")
            // The approvals' lookup leaves it out too.
            let targets = try await h.storage.pushTargets(deviceIDs: [laptop, phone.device.id], now: h.clock.now())
            #expect(targets.map(\.deviceID) == [phone.device.id])

            notifications.connection(laptop, seen: false)
            try await Self.until("cleared") { try await Self.mark(h.storage, laptop) == 0 }
            #expect(try await Self.laptopPushed(for: send, pushes, expected: true), "hidden or closed: pushed")

            // A node that stopped without clearing: the mark runs out by itself.
            notifications.connection(laptop, seen: true)
            try await Self.until("marked again") { try await Self.mark(h.storage, laptop) > h.clock.now().ms }
            h.clock.advance(LivePresence.markFor + 1)
            #expect(try await Self.laptopPushed(for: send, pushes, expected: true), "a mark that ran out: pushed")
            h.clock.advance(-(LivePresence.markFor + 1))

            // A target that replaces another keeps its device's mark.
            try await Self.until("renewed") { try await Self.mark(h.storage, laptop) > h.clock.now().ms }
            try await bob.sdk.setWebPushSubscription(PushTargetTests.subscription("https://push.example.net/laptop2"))
            #expect(try await Self.mark(h.storage, laptop) > h.clock.now().ms, "still marked under its new target")

            // Stopping, the node clears what it marked.
            await notifications.presence.clearAll()
            #expect(try await Self.mark(h.storage, laptop) == 0)
        }
    }

    /// Marked by the node that holds the connection, seen by the node that commits the message.
    @Test func aMarkMadeOnOneNodeHoldsOnAnother() async throws {
        guard Backend.available.contains(.postgres) else { return }
        let location = try Backend.postgres.freshLocation()
        let pushes = Pushes()
        let a = try await Harness.make(
            .postgres,
            location: location,
            pushTransport: pushes.transport,
            pushResolver: Self.resolver
        )
        let b = try await Harness.make(
            .postgres,
            location: location,
            pushTransport: pushes.transport,
            pushResolver: Self.resolver
        )
        let appB = Application(router: try b.router(), configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await appB.test(.live) { client in
            let server = URL(string: "http://127.0.0.1:\(client.port!)")!
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            let phone = try await Person.addDevice("bob", sdk: bob.sdk, name: "phone")
            try await bob.sdk.setWebPushSubscription(PushTargetTests.subscription("https://push.example.net/laptop"))
            try await phone.sdk.setWebPushSubscription(PushTargetTests.subscription("https://push.example.net/phone"))
            a.services.notifications.connection(bob.device.id, seen: true)
            try await Self.until("marked by A") { try await Self.mark(b.storage, bob.device.id) > b.clock.now().ms }
            let send = { _ = try await alice.send("hello", to: ["bob"]) }
            #expect(try await !Self.laptopPushed(for: send, pushes, expected: false), "B leaves out what A holds")

            // The laptop reconnects to B, then A lets its old connection go: B's mark stays.
            b.services.notifications.connection(bob.device.id, seen: true)
            try await Self.until("marked by B") {
                try await b.storage.sql.raw(
                    "SELECT live_by FROM push_targets WHERE device_id = \(bind: bob.device.id)"
                ).first()?.decode(column: "live_by", as: String?.self) == b.services.notifications.presence.node
            }
            a.services.notifications.connection(bob.device.id, seen: false)
            await a.services.notifications.presence.clearAll()
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await Self.mark(b.storage, bob.device.id) > b.clock.now().ms, "A clears only its own marks")
            #expect(try await !Self.laptopPushed(for: send, pushes, expected: false), "still held by B")
            b.services.notifications.connection(bob.device.id, seen: false)
            try await Self.until("cleared by B") { try await Self.mark(b.storage, bob.device.id) == 0 }
        }
        await b.close()
        await a.close()
    }
}
