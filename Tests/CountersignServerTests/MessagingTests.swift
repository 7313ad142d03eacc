import CountersignClient
import CountersignCrypto
import Foundation
import Hummingbird
import HummingbirdTesting
import SQLKit
import Testing

@testable import CountersignServer

/// A user of the SDK: an account session plus one device (one key for signing and encryption, as the CLI).
struct Person {
    let username: String
    let sdk: CountersignClient
    var identity: Identity
    var device: Device

    static func make(_ username: String, server: URL, deviceName: String = "laptop") async throws -> Person {
        let sdk = CountersignClient(server: server)
        try await sdk.register(username: username, password: "correct horse", name: "P", lastname: "Q")
        try await sdk.signIn(username: username, password: "correct horse")
        return try await addDevice(username, sdk: sdk, name: deviceName)
    }

    /// Another device of the same account: its own client, its own keys.
    static func addDevice(_ username: String, sdk account: CountersignClient, name: String) async throws -> Person {
        let identity = Identity.generate()
        let device = try await account.registerDevice(name: name, signing: identity, encryptionKey: identity.publicKey)
        let sdk = CountersignClient(server: account.server, token: account.token)
        try await sdk.openDeviceSession(deviceID: device.id, signing: identity)
        return Person(username: username, sdk: sdk, identity: identity, device: device)
    }

    func send(_ text: String, to: [String], after: Int? = nil) async throws -> SentMessage {
        try await sdk.sendMessage(Array(text.utf8), to: to, from: username, signing: identity, deliverAfter: after)
    }

    /// Fetches every due message, opens each with the sender's key from the directory, acknowledges them.
    func inbox(ack: Bool = true) async throws -> [(QueuedMessage, String)] {
        var out: [(QueuedMessage, String)] = []
        let page = try await sdk.fetchMessages()
        for m in page.messages {
            let envelope = try MessageEnvelope(bytes: m.envelope.bytes)
            let directory = try await sdk.directory(username: m.from)
            let signer = try #require(
                directory.history.first { $0.signingKeyId == Hex.encode(envelope.senderKeyID.bytes) }
            )
            let opened = try envelope.open(with: identity, from: try PublicKey(spki: signer.signingKey.bytes))
            out.append((m, String(decoding: opened.plaintext, as: UTF8.self)))
        }
        if ack, !page.messages.isEmpty { try await sdk.acknowledge(page.messages.map(\.seq)) }
        return out
    }
}

/// Runs `body` against a live server (real sockets) over `backend`.
func withLiveServer(
    _ backend: Backend,
    clock: ManualClock = ManualClock(),
    configure: (inout ServerConfiguration) -> Void = { _ in },
    wrapStore: (any ServerStorage) -> any SignInStore = { $0 },
    pushTransport: WebPushSender.Transport? = nil,
    pushResolver: WebPushSender.Resolver? = nil,
    apnsTransport: APNsSender.Transport? = nil,
    _ body: @Sendable (URL, Harness) async throws -> Void
) async throws {
    let h = try await Harness.make(
        backend,
        clock: clock,
        configure: configure,
        wrapStore: wrapStore,
        pushTransport: pushTransport,
        pushResolver: pushResolver,
        apnsTransport: apnsTransport
    )
    let router = try h.router()
    let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    do {
        try await app.test(.live) { client in try await body(URL(string: "http://127.0.0.1:\(client.port!)")!, h) }
    } catch {
        await h.close()
        throw error
    }
    await h.close()
}

@Suite(.closesStorage) struct MessagingTests {
    @Test(arguments: Backend.available)
    func twoUsersThreeDevicesSendFetchAckAndReceipts(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            let bobPhone = try await Person.addDevice("bob", sdk: bob.sdk, name: "phone")
            let sent = try await alice.send("see you at noon", to: ["bob"])
            #expect(sent.recipientDevices == 2)
            for device in [bob, bobPhone] {
                let got = try await device.inbox()
                #expect(
                    got.map(\.1) == ["see you at noon"] && got.first?.0.direction == "incoming"
                        && got.first?.0.from == "alice"
                )
                #expect(try await device.inbox().isEmpty, "acknowledged entries are gone")
            }
            let outgoing = try await alice.inbox()
            #expect(
                outgoing.map(\.1) == ["see you at noon"] && outgoing.first?.0.direction == "outgoing",
                "the sender's own copy"
            )
            let status = try await alice.sdk.messageStatus(id: sent.id)
            #expect(
                status.recipientDevices == 2 && status.fetchedBy == 2 && status.acknowledgedBy == 2
                    && status.to == ["bob"]
            )
            // Bob cannot read Alice's receipts.
            do {
                _ = try await bob.sdk.messageStatus(id: sent.id)
                Issue.record("another account read the receipt")
            } catch let e as ClientError {
                #expect(e.code == .notFound)
            }
            // The directory lists the active devices with their keys.
            let directory = try await alice.sdk.directory(username: "bob")
            #expect(Set(directory.devices.map(\.id)) == [bob.device.id, bobPhone.device.id])
            #expect(directory.devices.allSatisfy { $0.encryptionKeyId.count == 32 })
        }
    }
}
