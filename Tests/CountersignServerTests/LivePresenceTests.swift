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
        let deadline = ContinuousClock.now + .seconds(30)
        while try await !done() {
            guard ContinuousClock.now < deadline else {
                Issue.record("\(what): not within 30 s")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Sends one message to bob and waits for the phone's push; returns how many the laptop got for it.
    static func laptopPushes(for send: () async throws -> Void, _ pushes: Pushes) async throws -> Int {
        let (phone, laptop) = (pushes.count("/phone"), pushes.count("/laptop"))
        try await send()
        try await until("the phone's push") { pushes.count("/phone") > phone }
        try await Task.sleep(for: .milliseconds(300))
        return pushes.count("/laptop") - laptop
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

            #expect(try await Self.laptopPushes(for: send, pushes) == 1, "not connected: pushed")

            notifications.connection(laptop, seen: true)
            try await Self.until("marked") { try await Self.mark(h.storage, laptop) > h.clock.now().ms }
            #expect(try await Self.mark(h.storage, phone.device.id) == 0)
            #expect(try await Self.laptopPushes(for: send, pushes) == 0, "seen: told over its connection only")
            // The approvals' lookup leaves it out too.
            let targets = try await h.storage.pushTargets(deviceIDs: [laptop, phone.device.id], now: h.clock.now())
            #expect(targets.map(\.deviceID) == [phone.device.id])

            notifications.connection(laptop, seen: false)
            try await Self.until("cleared") { try await Self.mark(h.storage, laptop) == 0 }
            #expect(try await Self.laptopPushes(for: send, pushes) == 1, "hidden or closed: pushed")

            // A node that stopped without clearing: the mark runs out by itself.
            notifications.connection(laptop, seen: true)
            try await Self.until("marked again") { try await Self.mark(h.storage, laptop) > h.clock.now().ms }
            h.clock.advance(LivePresence.markFor + 1)
            #expect(try await Self.laptopPushes(for: send, pushes) == 1, "a mark that ran out: pushed")
            h.clock.advance(-(LivePresence.markFor + 1))

            // A target registered while its device is seen here starts marked.
            notifications.connection(laptop, seen: false)
            try await Self.until("cleared again") { try await Self.mark(h.storage, laptop) == 0 }
            notifications.connection(phone.device.id, seen: true)
            try await phone.sdk.setWebPushSubscription(PushTargetTests.subscription("https://push.example.net/phone2"))
            try await Self.until("the new target marked") {
                try await Self.mark(h.storage, phone.device.id) > h.clock.now().ms
            }
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
            #expect(try await Self.laptopPushes(for: send, pushes) == 0, "B commits, and leaves out what A holds")
        }
        await b.close()
        await a.close()
    }
}
