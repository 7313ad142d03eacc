import CountersignClient
import CountersignCrypto
import Foundation
import Testing

/// `Mailbox`: stored before acknowledged, duplicates dropped, unopenable entries dropped, without a server.
@Suite struct MailboxTests {
    func sync(_ mailbox: Mailbox<MemoryMailboxStore>, _ queue: FakeQueue) async throws -> ([String], [String]) {
        var events: [String] = []
        let fresh = try await mailbox.sync(
            fetch: { queue.fetch(after: $0) },
            acknowledge: { seqs in
                mailbox.store.record("ack \(seqs.map(String.init).joined(separator: ","))")
                queue.acknowledge(seqs)
            },
            report: { event in
                if case .dropped(let drop) = event { events.append("\(drop)") }
            }
        )
        return (fresh, events)
    }

    @Test func everyEntryIsStoredBeforeItsPageIsAcknowledged() async throws {
        let entries = try (1...5).map { try Fixture.queued(seq: Int64($0)) }
        let store = MemoryMailboxStore()
        let queue = FakeQueue(entries, pageSize: 2)
        let (fresh, _) = try await sync(Mailbox(store: store), queue)
        #expect(fresh == entries.map(\.id))
        #expect(queue.acknowledged == [1, 2, 3, 4, 5] && queue.entries.isEmpty)
        let ids = entries.map(\.id)
        #expect(
            store.log == [
                "save \(ids[0])", "save \(ids[1])", "ack 1,2", "save \(ids[2])", "save \(ids[3])", "ack 3,4",
                "save \(ids[4])", "ack 5",
            ]
        )
        let kept = try #require(try store.message(id: ids[0]))
        #expect(kept.envelope == entries[0].envelope && !kept.read && kept.sentAt == Fixture.t0)
    }

    @Test func aStoreThatFailsAcknowledgesNothing() async throws {
        let entries = try (1...3).map { try Fixture.queued(seq: Int64($0)) }
        let store = MemoryMailboxStore()
        store.failSaves = true
        let queue = FakeQueue(entries, pageSize: 10)
        await #expect(throws: MemoryMailboxStore.Full.self) { _ = try await sync(Mailbox(store: store), queue) }
        #expect(queue.acknowledged.isEmpty && queue.entries.count == 3, "the relay keeps every entry")
        #expect(!store.log.contains { $0.hasPrefix("ack") })
        // Once the store works again, the next sync stores and acknowledges all of them.
        store.failSaves = false
        let (fresh, _) = try await sync(Mailbox(store: store), queue)
        #expect(fresh.count == 3 && queue.entries.isEmpty)
    }

    @Test func aMessageDeliveredAgainIsAcknowledgedButNotStoredTwice() async throws {
        let entry = try Fixture.queued(seq: 1)
        let store = MemoryMailboxStore()
        let mailbox = Mailbox(store: store)
        #expect(try await sync(mailbox, FakeQueue([entry])).0 == [entry.id])
        var read = try #require(try store.message(id: entry.id))
        read.read = true
        try store.save(read)
        // The acknowledgement was lost: the relay sends it again, under a new queue position.
        var again = entry
        again.seq = 7
        let queue = FakeQueue([again, entry])
        let (fresh, _) = try await sync(mailbox, queue)
        #expect(fresh.isEmpty && queue.acknowledged == [7, 1])
        #expect(try store.message(id: entry.id)?.read == true, "the stored copy is left alone")
        #expect(try mailbox.receive(entry) == .duplicate)
    }

    @Test func aSentMessageRecordedWithoutItsEnvelopeIsFilledKeepingItsReadFlag() throws {
        let entry = try Fixture.queued(seq: 1, direction: "outgoing", fromName: "alice")
        let store = MemoryMailboxStore()
        try store.save(
            StoredMessage(
                id: entry.id,
                direction: "outgoing",
                from: "alice",
                fromDevice: "dev-1",
                to: ["alice"],
                sentAt: Fixture.t0,
                acceptedAt: Fixture.t0,
                deliverAt: Fixture.t0 + 900,
                envelope: nil,
                read: true,
                readAt: nil
            )
        )
        guard case .filled(let filled) = try Mailbox(store: store).receive(entry) else {
            Issue.record("not filled")
            return
        }
        #expect(filled.envelope == entry.envelope && filled.read)
        #expect(try store.message(id: entry.id) == filled)
    }

    @Test func entriesThatCanNeverOpenAreDroppedAndAcknowledged() async throws {
        var badID = try Fixture.queued(seq: 1)
        badID.id = "../../contacts"
        var badDirection = try Fixture.queued(seq: 2)
        badDirection.direction = "sideways"
        var badName = try Fixture.queued(seq: 3)
        badName.from = "bob\u{1b}[2J"
        var badDevice = try Fixture.queued(seq: 4)
        badDevice.fromDevice = "dev/../1"
        var notEnvelope = try Fixture.queued(seq: 5)
        notEnvelope.envelope = Base64URL(Array(notEnvelope.envelope.bytes.dropLast(9)))
        var otherID = try Fixture.queued(seq: 6)
        otherID.id = try Fixture.queued(seq: 99).id
        var flipped = try Fixture.queued(seq: 7)
        var bytes = flipped.envelope.bytes
        bytes[3] ^= 0x01
        flipped.envelope = Base64URL(bytes)
        let good = try Fixture.queued(seq: 8)
        let store = MemoryMailboxStore()
        let queue = FakeQueue(
            [badID, badDirection, badName, badDevice, notEnvelope, otherID, flipped, good],
            pageSize: 3
        )
        let (fresh, dropped) = try await sync(Mailbox(store: store), queue)
        #expect(fresh == [good.id])
        #expect(store.messageIDs() == [good.id])
        #expect(queue.acknowledged == Array(1...8), "dropped entries are acknowledged: they never open")
        #expect(dropped.count == 7, "\(dropped)")
        #expect(dropped[0] == "dropped queue entry 1: the server sent an invalid message ID or direction")
        #expect(dropped[2].hasSuffix("a sender or recipient name that is not a username"))
        #expect(dropped[4].contains("not a valid envelope"))
        #expect(dropped[5] == "dropped message \(otherID.id): its envelope carries another message ID")
    }

    @Test func usernamesFollowTheServersRule() {
        for good in ["bob", "a.b_c-d", "x23", String(repeating: "a", count: 32)] {
            #expect(Mailbox<MemoryMailboxStore>.isUsername(good))
        }
        for bad in ["ab", "-bob", "bob.", "b\u{212A}b", "bob\u{0}", String(repeating: "a", count: 33), "bo b"] {
            #expect(!Mailbox<MemoryMailboxStore>.isUsername(bad), "\(bad)")
        }
    }

    @Test func theDirectoryStoreReplacesADamagedCopyWithTheRelaysAndSaysSo() throws {
        let config = ConfigDirectory(try Fixture.temporaryDirectory())
        let entry = try Fixture.queued(seq: 1)
        try config.makeDirectory(config.messagesDirectory)
        try Data("{\"id\": \"trunc".utf8).write(to: config.messageURL(id: entry.id))
        #expect(throws: LocalStoreError.self) { try config.message(id: entry.id) }
        var replaced: [String] = []
        let received = try Mailbox(store: config).receive(entry) { event in
            if case .replacingDamaged(let id, let error) = event { replaced.append("\(id): \(error)") }
        }
        guard case .stored = received else {
            Issue.record("\(received)")
            return
        }
        #expect(replaced.count == 1 && replaced[0].contains("is damaged"), "\(replaced)")
        #expect(try config.message(id: entry.id)?.envelope == entry.envelope)
        #expect(ConfigDirectoryTests.mode(config.messageURL(id: entry.id).path) == 0o600)
        #expect(config.messageIDs() == [entry.id])
    }
}
