import CountersignCrypto
import Foundation
import Testing

@testable import CountersignClient
@testable import CountersignServer

/// The send path the server really uses (on SQLite the direct writer and session readers beside Fluent's
/// connections, on PostgreSQL SQLKit), under the writes that race with it.
@Suite(.closesStorage) struct SendPathTests {
    /// Sends in flight while the recipient adds and revokes devices: each send is stored against exactly
    /// the device set current when its transaction ran, or refused as a mismatch; never a server error,
    /// and the device writes (other connections' transactions, on SQLite) do not fail for the writer's sake.
    @Test(arguments: Backend.available)
    func sendsRacingDeviceChangesAreEachCheckedExactly(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            let tablet = try await Person.addDevice("bob", sdk: bob.sdk, name: "tablet")
            let keys = [alice.identity.publicKey, bob.identity.publicKey, tablet.identity.publicKey]
            let envelopes = try (0..<120).map { i in
                try MessageEnvelope.seal(Array("m\(i)".utf8), from: alice.identity, to: keys, created: Date())
            }
            async let outcomes = withThrowingTaskGroup(of: ProblemCode?.self) { group in
                for e in envelopes {
                    group.addTask {
                        await problemCode {
                            _ = try await alice.sdk.send(
                                "POST",
                                "/v1/messages",
                                body: SendMessageRequest(to: ["bob"], envelope: Base64URL(e.bytes)),
                                as: SentMessage.self,
                                credential: .device
                            )
                        }
                    }
                }
                return try await group.reduce(into: [ProblemCode?]()) { $0.append($1) }
            }
            // Meanwhile: a new phone (every later send lacks it), then the tablet revoked.
            let phone = try await Person.addDevice("bob", sdk: bob.sdk, name: "phone")
            try await bob.sdk.revokeDevice(id: tablet.device.id)
            let results = try await outcomes
            #expect(results.allSatisfy { $0 == nil || $0 == .deviceMismatch }, "\(results.compactMap { $0 })")
            let stored = results.filter { $0 == nil }.count
            #expect(try await h.count("messages") == stored)
            // Each stored message is queued for Alice and for Bob's laptop; the tablet's entries went with
            // its revocation, and the phone, added after, got none of them.
            #expect(try await h.count("message_queue") == 2 * stored)
            #expect(try await phone.inbox().isEmpty)
            // The revoked tablet's session is refused at once, and a send sealed to the old set is a mismatch.
            #expect(await problemCode { _ = try await tablet.send("still here?", to: ["alice"]) } == .unauthenticated)
            #expect(
                await problemCode {
                    _ = try await alice.sdk.send(
                        "POST",
                        "/v1/messages",
                        body: SendMessageRequest(
                            to: ["bob"],
                            envelope: Base64URL(
                                try MessageEnvelope.seal([1], from: alice.identity, to: keys, created: Date()).bytes
                            )
                        ),
                        as: SentMessage.self,
                        credential: .device
                    )
                } == .deviceMismatch
            )
            _ = try await alice.send("to the current set", to: ["bob"])
            #expect(try await phone.inbox().map(\.1) == ["to the current set"])
        }
    }

    /// A device revoked after its signature was checked but before its batch is written: the store
    /// refuses the send (the active-device read is inside the write transaction), on every store.
    @Test(arguments: Backend.available)
    func aSenderRevokedBeforeTheWriteIsRefusedByEveryStore(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            let aliceAccount = try await alice.sdk.me()
            let envelope = try MessageEnvelope.seal(
                [1],
                from: alice.identity,
                to: [alice.identity.publicKey, bob.identity.publicKey],
                created: Date()
            )
            let record = MessageRecord(
                id: Hex.encode(envelope.messageID),
                senderAccountID: aliceAccount.id,
                senderDeviceID: alice.device.id,
                senderUsername: "alice",
                recipients: ["bob"],
                envelope: envelope.bytes,
                digest: "d",
                acceptedAt: h.clock.now(),
                deliverAt: h.clock.now(),
                expiresAt: h.clock.now().addingTimeInterval(86_400),
                recipientDevices: 0,
                fetchedBy: 0,
                acknowledgedBy: 0,
                cancelled: false
            )
            let request = StoreRequest(
                message: record,
                senderSigningKeyID: alice.device.signingKeyId,
                keyIDs: Set(envelope.recipients.map { Hex.encode($0.bytes) })
            )
            try await alice.sdk.revokeDevice(id: alice.device.id)
            #expect(try await h.storage.store([request]) == [.senderChanged])
            var unknown = request
            unknown.message.recipients = ["bob", "nobody-at-all"]
            #expect(try await h.storage.store([unknown]) == [.unknownRecipients(["nobody-at-all"])])
            #expect(try await h.count("messages") == 0)
        }
    }
}
