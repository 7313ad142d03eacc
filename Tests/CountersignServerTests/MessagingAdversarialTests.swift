import CountersignCrypto
import CountersignTestSupport
import Foundation
import SQLKit
import Testing

@testable import CountersignClient
@testable import CountersignServer

/// A fixed-output generator: two seals with the same seed share a message ID (test-only; see SPEC §8.2).
struct RepeatingGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }
}

extension Harness {
    func count(_ table: String) async throws -> Int {
        Int(
            try await store.sql.raw("SELECT COUNT(*) AS n FROM \(unsafeRaw: table)").first()?.decode(
                column: "n",
                as: Int64.self
            ) ?? -1
        )
    }
}

struct RawSend: Encodable {
    var to: [String]
    var envelope: String
}

func problemCode(_ call: () async throws -> Void) async -> ProblemCode? {
    do {
        try await call()
        return nil
    } catch let e as ClientError {
        return e.code
    } catch {
        return nil
    }
}

/// Every way a device or a relay request can be wrong: each is refused with its own problem, and nothing
/// is stored.
@Suite(.closesStorage) struct MessagingAdversarialTests {
    @Test(arguments: Backend.available)
    func registrationNeedsProofOfPossessionAndRespectsLimits(_ backend: Backend) async throws {
        try await withLiveServer(backend, configure: { $0.maxDevicesPerAccount = 2 }) { server, h in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            let account = alice.sdk
            // A signature by another key than the one registered.
            let me = try await account.me()
            let real = Identity.generate()
            let other = Identity.generate()
            let challenge = try await account.send(
                "POST",
                "/v1/devices/challenges",
                body: CountersignClient.noBody,
                as: DeviceChallenge.self,
                credential: .account
            )
            let forged = DeviceRegistrationRequest(
                name: "forged",
                signingKey: Base64URL(real.publicKey.spkiDER),
                encryptionKey: Base64URL(real.publicKey.spkiDER),
                challenge: challenge.challenge,
                signature: Base64URL(
                    try other.signature(
                        for: DeviceProof.registrationMessage(
                            challenge: challenge.challenge.bytes,
                            accountID: me.id,
                            signingKey: real.publicKey,
                            encryptionKey: real.publicKey
                        )
                    )
                )
            )
            #expect(
                await problemCode {
                    _ = try await account.send(
                        "POST",
                        "/v1/devices",
                        body: forged,
                        as: Device.self,
                        credential: .account
                    )
                } == .badSignature
            )
            // The challenge was spent by that attempt, even though it failed.
            let replay = DeviceRegistrationRequest(
                name: "replay",
                signingKey: forged.signingKey,
                encryptionKey: forged.encryptionKey,
                challenge: challenge.challenge,
                signature: Base64URL(
                    try real.signature(
                        for: DeviceProof.registrationMessage(
                            challenge: challenge.challenge.bytes,
                            accountID: me.id,
                            signingKey: real.publicKey,
                            encryptionKey: real.publicKey
                        )
                    )
                )
            )
            #expect(
                await problemCode {
                    _ = try await account.send(
                        "POST",
                        "/v1/devices",
                        body: replay,
                        as: Device.self,
                        credential: .account
                    )
                } == .challengeInvalid
            )
            // Bob's challenge and signature, sent with Alice's session: the challenge names Bob's account.
            let bobMe = try await bob.sdk.me()
            let bobChallenge = try await bob.sdk.send(
                "POST",
                "/v1/devices/challenges",
                body: CountersignClient.noBody,
                as: DeviceChallenge.self,
                credential: .account
            )
            let crossed = DeviceRegistrationRequest(
                name: "crossed",
                signingKey: forged.signingKey,
                encryptionKey: forged.encryptionKey,
                challenge: bobChallenge.challenge,
                signature: Base64URL(
                    try real.signature(
                        for: DeviceProof.registrationMessage(
                            challenge: bobChallenge.challenge.bytes,
                            accountID: bobMe.id,
                            signingKey: real.publicKey,
                            encryptionKey: real.publicKey
                        )
                    )
                )
            )
            #expect(
                await problemCode {
                    _ = try await account.send(
                        "POST",
                        "/v1/devices",
                        body: crossed,
                        as: Device.self,
                        credential: .account
                    )
                } == .challengeInvalid
            )
            // A key another device already has: refused, even across accounts.
            #expect(
                await problemCode {
                    _ = try await bob.sdk.registerDevice(
                        name: "stolen",
                        signing: alice.identity,
                        encryptionKey: alice.identity.publicKey
                    )
                }
                    == .keyInUse
            )
            // Not a P-256 key.
            let junk = DeviceRegistrationRequest(
                name: "junk",
                signingKey: Base64URL([0x30, 0x03, 0x02, 0x01, 0x00]),
                encryptionKey: forged.encryptionKey,
                challenge: challenge.challenge,
                signature: forged.signature
            )
            #expect(
                await problemCode {
                    _ = try await account.send("POST", "/v1/devices", body: junk, as: Device.self, credential: .account)
                } == .invalidField
            )
            // The limit: Alice has one device; a second is fine, a third is refused.
            _ = try await Person.addDevice("alice", sdk: account, name: "second")
            #expect(
                await problemCode { _ = try await Person.addDevice("alice", sdk: account, name: "third") }
                    == .deviceLimit
            )
            // Re-authentication per the account's interval.
            _ = try await bob.sdk.updateSettings(AccountSettings(reauthIntervalMinutes: 5))
            h.clock.advance(6 * 60)
            #expect(
                await problemCode { _ = try await Person.addDevice("bob", sdk: bob.sdk, name: "late") }
                    == .reauthenticationRequired
            )
            try await bob.sdk.reauthenticate(password: "correct horse")
            _ = try await Person.addDevice("bob", sdk: bob.sdk, name: "late")
            #expect(try await h.count("devices") == 4, "alice ×2, bob ×2: nothing else was stored")
            let audit = try await h.store.auditEvents(accountID: me.id, before: nil, limit: 50).map {
                "\($0.kind) \($0.outcome)"
            }
            #expect(
                audit.contains("device-register bad-signature")
                    && audit.filter { $0 == "device-register success" }.count == 2
            )
        }
    }

    /// Registration challenges (20 per 10 minutes per account) and rotations (10 a day per device) each
    /// write a row others read, so both are limited.
    @Test func aFastClockWithinTheSkewIsAccepted() async throws {
        try await withLiveServer(.sqlite) { server, h in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            let envelope = try MessageEnvelope.seal(
                [4],
                from: alice.identity,
                to: [alice.identity.publicKey, bob.identity.publicKey],
                created: h.clock.now().addingTimeInterval(MessageService.maxCreatedSkew - 60)
            )
            let sent = try await alice.sdk.send(
                "POST",
                "/v1/messages",
                body: SendMessageRequest(to: ["bob"], envelope: Base64URL(envelope.bytes)),
                as: SentMessage.self,
                credential: .device
            )
            #expect(sent.id == Hex.encode(envelope.messageID))
        }
    }

    @Test func challengesAndRotationsAreRateLimited() async throws {
        try await withLiveServer(.sqlite) { server, h in
            var alice = try await Person.make("alice", server: server)  // spent one challenge
            for _ in 0..<19 {
                _ = try await alice.sdk.send(
                    "POST",
                    "/v1/devices/challenges",
                    body: CountersignClient.noBody,
                    as: DeviceChallenge.self,
                    credential: .account
                )
            }
            #expect(
                await problemCode {
                    _ = try await alice.sdk.send(
                        "POST",
                        "/v1/devices/challenges",
                        body: CountersignClient.noBody,
                        as: DeviceChallenge.self,
                        credential: .account
                    )
                } == .rateLimited
            )
            h.clock.advance(31)
            _ = try await alice.sdk.send(
                "POST",
                "/v1/devices/challenges",
                body: CountersignClient.noBody,
                as: DeviceChallenge.self,
                credential: .account
            )
            for _ in 0..<10 {
                let next = Identity.generate()
                _ = try await alice.sdk.rotateKeys(
                    deviceID: alice.device.id,
                    old: alice.identity,
                    newSigning: next,
                    newEncryptionKey: next.publicKey
                )
                alice.identity = next
            }
            let eleventh = Identity.generate()
            #expect(
                await problemCode {
                    _ = try await alice.sdk.rotateKeys(
                        deviceID: alice.device.id,
                        old: alice.identity,
                        newSigning: eleventh,
                        newEncryptionKey: eleventh.publicKey
                    )
                } == .rateLimited
            )
            #expect(try await alice.sdk.directory(username: "alice").history.count == 11)
        }
    }

    @Test(arguments: Backend.available)
    func sessionsAndEndpointsBelongToTheirOwners(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            // A nonce issued for Alice's device, signed by Bob's key for Bob's device: refused.
            let nonce = try await bob.sdk.send(
                "POST",
                "/v1/device-sessions/challenges",
                body: DeviceSessionChallengeRequest(deviceId: alice.device.id),
                as: DeviceChallenge.self
            )
            let swapped = DeviceSessionRequest(
                deviceId: bob.device.id,
                nonce: nonce.challenge,
                signature: Base64URL(
                    try bob.identity.signature(
                        for: DeviceProof.sessionMessage(nonce: nonce.challenge.bytes, deviceID: bob.device.id)
                    )
                )
            )
            #expect(
                await problemCode {
                    _ = try await bob.sdk.send("POST", "/v1/device-sessions", body: swapped, as: DeviceSession.self)
                } == .challengeInvalid
            )
            // Alice's device ID with Bob's key.
            #expect(
                await problemCode {
                    _ = try await CountersignClient(server: server).openDeviceSession(
                        deviceID: alice.device.id,
                        signing: bob.identity
                    )
                }
                    == .badSignature
            )
            // An account session is not a device session: it never reads a queue or sends.
            let accountOnly = CountersignClient(server: server, token: alice.sdk.token, deviceToken: alice.sdk.token)
            #expect(await problemCode { _ = try await accountOnly.fetchMessages() } == .unauthenticated)
            // Nor is a device token an account session.
            let deviceOnly = CountersignClient(server: server, token: alice.sdk.deviceToken)
            #expect(await problemCode { _ = try await deviceOnly.devices() } == .unauthenticated)

            let sent = try await alice.send("private", to: ["bob"], after: 60)
            #expect(await problemCode { _ = try await bob.sdk.messageStatus(id: sent.id) } == .notFound)
            #expect(await problemCode { try await bob.sdk.cancelMessage(id: sent.id) } == .notFound)
            #expect(
                await problemCode { _ = try await bob.sdk.renameDevice(id: alice.device.id, to: "mine") } == .notFound
            )
            #expect(await problemCode { try await bob.sdk.revokeDevice(id: alice.device.id) } == .notFound)
            // Acknowledging another device's queue positions deletes nothing.
            h.clock.advance(61)
            let aliceCopy = try await alice.sdk.fetchMessages()
            #expect(try await bob.sdk.acknowledge(aliceCopy.messages.map(\.seq)) == 0)
            #expect(try await alice.sdk.fetchMessages().messages.count == 1, "Alice's outgoing copy is still queued")
            // The directory needs some session; unknown users are 404.
            #expect(
                await problemCode {
                    _ = try await CountersignClient(server: server, token: "cs_not-a-session").directory(
                        username: "alice"
                    )
                } == .unauthenticated
            )
            #expect(await problemCode { _ = try await alice.sdk.directory(username: "nobody-here") } == .notFound)
        }
    }

    @Test(arguments: Backend.available)
    func forgedWrongRoutedReplayedAndMalformedEnvelopesStoreNothing(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            let phone = try await Person.addDevice("bob", sdk: bob.sdk, name: "phone")
            let everyone = [alice.identity.publicKey, bob.identity.publicKey, phone.identity.publicKey]
            func post(_ envelope: [UInt8], to: [String] = ["bob"], as person: Person = alice) async -> ProblemCode? {
                await problemCode {
                    _ = try await person.sdk.send(
                        "POST",
                        "/v1/messages",
                        body: SendMessageRequest(to: to, envelope: Base64URL(envelope)),
                        as: SentMessage.self,
                        credential: .device
                    )
                }
            }
            // Signed by a key that is not the sending device's.
            let mallory = Identity.generate()
            #expect(
                await post(try MessageEnvelope.seal([1], from: mallory, to: everyone, created: Date()).bytes)
                    == .badSignature
            )
            // Issue 33: dated more than 5 minutes ahead of the server's clock (a fast clock within that is
            // accepted: aFastClockWithinTheSkewIsAccepted).
            let serverNow = h.clock.now()
            let ahead = try MessageEnvelope.seal(
                [3],
                from: alice.identity,
                to: everyone,
                created: serverNow.addingTimeInterval(MessageService.maxCreatedSkew + 60)
            )
            #expect(await post(ahead.bytes) == .invalidEnvelope)
            // Alice's envelope sent through Bob's device session.
            let alices = try MessageEnvelope.seal([2], from: alice.identity, to: everyone, created: Date())
            #expect(await post(alices.bytes, as: bob) == .badSignature)
            // A flipped body byte: the signature no longer holds.
            var flipped = alices.bytes
            flipped[flipped.count - 70] ^= 1
            #expect(await post(flipped) == .badSignature)
            // Bob's phone left out, then a stranger's key added.
            do {
                _ = try await alice.sdk.send(
                    "POST",
                    "/v1/messages",
                    body: SendMessageRequest(
                        to: ["bob"],
                        envelope: Base64URL(
                            try MessageEnvelope.seal(
                                [3],
                                from: alice.identity,
                                to: [alice.identity.publicKey, bob.identity.publicKey],
                                created: Date()
                            ).bytes
                        )
                    ),
                    as: SentMessage.self,
                    credential: .device
                )
                Issue.record("accepted without the phone")
            } catch ClientError.problem(let p) {
                #expect(
                    p.kind == .deviceMismatch && p.missingDevices?.map(\.deviceId) == [phone.device.id]
                        && p.extraDevices == []
                )
                #expect(p.missingDevices?.first?.username == "bob")
            }
            do {
                _ = try await alice.sdk.send(
                    "POST",
                    "/v1/messages",
                    body: SendMessageRequest(
                        to: ["bob"],
                        envelope: Base64URL(
                            try MessageEnvelope.seal(
                                [4],
                                from: alice.identity,
                                to: everyone + [mallory.publicKey],
                                created: Date()
                            ).bytes
                        )
                    ),
                    as: SentMessage.self,
                    credential: .device
                )
                Issue.record("accepted an extra key")
            } catch ClientError.problem(let p) {
                #expect(
                    p.kind == .deviceMismatch
                        && p.extraDevices?.map(\.encryptionKeyId) == [Hex.encode(mallory.publicKey.fingerprint.bytes)]
                )
            }
            // Sealed for Bob but addressed to nobody else: Alice's own devices alone are expected, Bob's are extra.
            #expect(await post(alices.bytes, to: ["alice"]) == .deviceMismatch)
            #expect(await post(alices.bytes, to: ["nobody-at-all"]) == .unknownRecipient)
            #expect(await post(alices.bytes, to: []) == .invalidField)
            #expect(await post(Array(repeating: 7, count: 200)) == .invalidEnvelope)
            #expect(await post(Array(alices.bytes.dropLast(1))) == .invalidEnvelope, "truncated")
            #expect(await post(alices.bytes + [0]) == .invalidEnvelope, "trailing byte")
            #expect(
                await post(Array(repeating: 0, count: MessageEnvelope.maxSize + 1)) == .invalidEnvelope,
                "over the largest envelope"
            )
            #expect(
                await problemCode {
                    _ = try await alice.sdk.send(
                        "POST",
                        "/v1/messages",
                        body: RawSend(to: ["bob"], envelope: "not base64url!"),
                        as: SentMessage.self,
                        credential: .device
                    )
                } == .malformedRequest
            )
            do {
                _ = try await alice.sdk.send(
                    "POST",
                    "/v1/messages",
                    body: RawSend(to: ["bob"], envelope: String(repeating: "A", count: 1_600_000)),
                    as: SentMessage.self,
                    credential: .device
                )
                Issue.record("accepted a 1.6 MB body")
            } catch ClientError.problem(let p) {
                #expect(
                    p.kind == .payloadTooLarge && p.detail.contains("1500000"),
                    "the route's own limit is named: \(p.detail)"
                )
            }
            #expect(
                await problemCode {
                    _ = try await alice.sdk.send(
                        "POST",
                        "/v1/messages",
                        body: SendMessageRequest(
                            to: ["bob"],
                            envelope: Base64URL(alices.bytes),
                            deliverAfter: 2_592_001
                        ),
                        as: SentMessage.self,
                        credential: .device
                    )
                } == .invalidField
            )
            #expect(try await h.count("messages") == 0, "nothing stored by any refusal")
            #expect(try await h.count("message_queue") == 0)

            // The same bytes twice: one message, one entry per device; other bytes with the same ID: 409.
            let first = try await alice.sdk.send(
                "POST",
                "/v1/messages",
                body: SendMessageRequest(to: ["bob"], envelope: Base64URL(alices.bytes)),
                as: SentMessage.self,
                credential: .device
            )
            let again = try await alice.sdk.send(
                "POST",
                "/v1/messages",
                body: SendMessageRequest(to: ["bob"], envelope: Base64URL(alices.bytes)),
                as: SentMessage.self,
                credential: .device
            )
            #expect(first == again && first.recipientDevices == 2)
            #expect(try await h.count("messages") == 1)
            #expect(try await h.count("message_queue") == 3)
            var g1 = RepeatingGenerator(state: 42)
            var g2 = RepeatingGenerator(state: 42)
            let a = try MessageEnvelope.seal([9], from: alice.identity, to: everyone, created: 1, using: &g1)
            let b = try MessageEnvelope.seal([8], from: alice.identity, to: everyone, created: 1, using: &g2)
            #expect(a.messageID == b.messageID && a.bytes != b.bytes)
            #expect(await post(a.bytes) == nil)
            #expect(await post(b.bytes) == .messageIDReused)
            #expect(try await h.count("messages") == 2)
        }
    }

    /// Within one group-commit batch: a repeat of the same bytes is a duplicate of the first, other bytes
    /// under its ID are refused, a stale device set is a mismatch, and the good ones are all stored.
    @Test(arguments: Backend.available)
    func oneBatchGivesEachSendItsOwnOutcome(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            let both = [alice.identity.publicKey, bob.identity.publicKey]
            let aliceAccount = try await alice.sdk.me()
            func request(_ e: MessageEnvelope) -> StoreRequest {
                let id = Hex.encode(e.messageID)
                let record = MessageRecord(
                    id: id,
                    senderAccountID: aliceAccount.id,
                    senderDeviceID: alice.device.id,
                    senderUsername: "alice",
                    recipients: ["bob"],
                    envelope: e.bytes,
                    digest: Hex.encode(e.signature),
                    acceptedAt: h.clock.now(),
                    deliverAt: h.clock.now(),
                    expiresAt: h.clock.now().addingTimeInterval(86_400),
                    recipientDevices: 0,
                    fetchedBy: 0,
                    acknowledgedBy: 0,
                    cancelled: false
                )
                return StoreRequest(
                    message: record,
                    senderSigningKeyID: alice.device.signingKeyId,
                    keyIDs: Set(e.recipients.map { Hex.encode($0.bytes) })
                )
            }
            var g1 = RepeatingGenerator(state: 7)
            var g2 = RepeatingGenerator(state: 7)
            let first = try MessageEnvelope.seal([1], from: alice.identity, to: both, created: 1, using: &g1)
            let sameID = try MessageEnvelope.seal([2], from: alice.identity, to: both, created: 1, using: &g2)
            let other = try MessageEnvelope.seal([3], from: alice.identity, to: both, created: Date())
            let stale = try MessageEnvelope.seal(
                [4],
                from: alice.identity,
                to: [alice.identity.publicKey],
                created: Date()
            )
            var wrongKey = request(other)
            wrongKey.senderSigningKeyID = String(repeating: "0", count: 32)
            // The server's store (on SQLite the direct writer).
            let store = h.storage
            let outcomes = try await store.store([
                request(first), request(first), request(sameID), request(stale), request(other), wrongKey,
            ])
            #expect(outcomes.count == 6)
            #expect({ if case .stored(1, _) = outcomes[0] { true } else { false } }())
            if case .duplicate(let earlier) = outcomes[1] {
                #expect(earlier.id == Hex.encode(first.messageID))
            } else {
                Issue.record("\(outcomes[1])")
            }
            #expect(outcomes[2] == .idReused)
            if case .deviceMismatch(let missing, let extra) = outcomes[3] {
                #expect(missing.map(\.deviceID) == [bob.device.id] && extra.isEmpty)
            } else {
                Issue.record("\(outcomes[3])")
            }
            #expect({ if case .stored(1, _) = outcomes[4] { true } else { false } }())
            #expect(outcomes[5] == .senderChanged)
            #expect(try await h.count("messages") == 2)
            #expect(try await h.count("message_queue") == 4)
            #expect(try await bob.inbox().map(\.1).sorted() == ["\u{1}", "\u{3}"])
        }
    }

    @Test(arguments: Backend.available)
    func delayedDeliveryCancelRevokeAndRotate(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            var alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            let phone = try await Person.addDevice("bob", sdk: bob.sdk, name: "phone")
            let later = try await alice.send("in fifteen seconds", to: ["bob"], after: 15)
            #expect(try await bob.inbox().isEmpty, "not due yet")
            h.clock.advance(14)
            #expect(try await bob.inbox().isEmpty)
            h.clock.advance(2)
            #expect(try await bob.inbox().map(\.1) == ["in fifteen seconds"])
            #expect(later.deliverAt.timeIntervalSince(later.acceptedAt) == 15)
            // Cancel before it is due: nobody ever sees it, and its ciphertext is gone.
            let cancelled = try await alice.send("never mind", to: ["bob"], after: 60)
            try await alice.sdk.cancelMessage(id: cancelled.id)
            #expect(try await alice.sdk.messageStatus(id: cancelled.id).cancelled)
            h.clock.advance(61)
            #expect(
                try await phone.inbox().map(\.1) == ["in fifteen seconds"],
                "the phone gets the first, not the cancelled one"
            )
            let due = try await alice.send("now", to: ["bob"])
            #expect(await problemCode { try await alice.sdk.cancelMessage(id: due.id) } == .alreadyDelivered)
            // Revoking the phone: its session ends, it stops receiving, senders are told to drop it.
            try await bob.sdk.revokeDevice(id: phone.device.id)
            #expect(await problemCode { _ = try await phone.sdk.fetchMessages() } == .unauthenticated)
            #expect(
                await problemCode {
                    _ = try await CountersignClient(server: server).openDeviceSession(
                        deviceID: phone.device.id,
                        signing: phone.identity
                    )
                }
                    == .deviceRevoked
            )
            let afterRevoke = try await alice.send("phone gone", to: ["bob"])
            #expect(afterRevoke.recipientDevices == 1)
            // Rotation: old messages still open with the old key, new ones are sealed to the new key.
            _ = try await bob.inbox()
            let oldIdentity = alice.identity
            let fresh = Identity.generate()
            let rotated = try await alice.sdk.rotateKeys(
                deviceID: alice.device.id,
                old: oldIdentity,
                newSigning: fresh,
                newEncryptionKey: fresh.publicKey
            )
            #expect(rotated.signingKeyId == Hex.encode(fresh.publicKey.fingerprint.bytes))
            alice.identity = fresh
            _ = try await alice.send("after rotation", to: ["bob"])
            #expect(
                try await bob.inbox().map(\.1) == ["after rotation"],
                "verified with the new signing key from the directory"
            )
            let directory = try await bob.sdk.directory(username: "alice")
            #expect(directory.history.count == 2 && directory.history.first?.retiredBecause == "rotated")
            #expect(
                await problemCode {
                    _ = try await alice.sdk.rotateKeys(
                        deviceID: alice.device.id,
                        old: oldIdentity,
                        newSigning: Identity.generate(),
                        newEncryptionKey: Identity.generate().publicKey
                    )
                } == .badSignature,
                "the retired key cannot vouch again"
            )
        }
    }

    @Test(arguments: Backend.available)
    func hundredConcurrentSendsNoneLostOrDuplicated(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            let ids = try await withThrowingTaskGroup(of: String.self) { group in
                for i in 0..<100 { group.addTask { try await alice.send("message \(i)", to: ["bob"]).id } }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(ids.count == 100)
            var received: [String] = []
            var after: Int64 = 0
            while true {
                let page = try await bob.sdk.fetchMessages(after: after, limit: 30)
                received += page.messages.map(\.id)
                guard let next = page.next else { break }
                after = next
            }
            #expect(received.count == 100 && Set(received) == ids, "each exactly once")
            #expect(
                try await h.count("message_queue") == 200,
                "one entry for Bob, one outgoing copy for Alice, per message"
            )
        }
    }

    /// What the server sees: a known text sent through it is nowhere in the SQLite file, its WAL, or a
    /// pg_dump of the PostgreSQL database.
    @Test(arguments: Backend.available)
    func theServerNeverHoldsThePlaintext(_ backend: Backend) async throws {
        let secret = "attack at dawn: the-plaintext-marker-7f3a"
        try await withLiveServer(backend) { server, h in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            _ = try await alice.send(secret, to: ["bob"])
            _ = try await alice.send(secret, to: ["bob"], after: 3600)
            #expect(try await h.count("messages") == 2)
            let needle = Data(secret.utf8)
            switch h.config.database {
            case .sqlite(let path):
                var all = Data()
                for file in [path, path + "-wal"] {
                    let bytes = try #require(FileManager.default.contents(atPath: file), "\(file) exists")
                    #expect(bytes.range(of: needle) == nil, "\(file) holds no plaintext")
                    all += bytes
                }
                #expect(
                    all.range(of: Data("alice".utf8)) != nil,
                    "the search itself works: the routing names are there"
                )
            case .postgres(let url):
                let (status, dump, errors) = try Spawned.run("/usr/bin/env", ["pg_dump", url])
                #expect(status == 0 && dump.count > 1000, "\(String(decoding: errors, as: UTF8.self))")
                #expect(dump.range(of: needle) == nil, "pg_dump holds no plaintext")
                #expect(dump.range(of: Data("alice".utf8)) != nil, "the search itself works")
            }
            #expect(try await bob.inbox().map(\.1) == [secret], "and yet Bob reads it")
        }
    }
}
