import CountersignClient
import CountersignCrypto
import Foundation
import Testing

/// `ContactBook`: trust on first use over a `PinStore`, refusal on change, rotations followed only along
/// a chain each pinned key signed (docs/PROTOCOL.md §1), and saves that keep other runs' pins.
@Suite struct ContactBookTests {
    let t0 = Fixture.t0

    @Test func twoBooksThatPinDifferentPeopleKeepBothPins() throws {
        let store = MemoryPinStore()
        var first = try ContactBook(store: store)
        var second = try ContactBook(store: store)
        let bob = Fixture.directory("bob", deviceID: "b1", keys: [.generate()], at: [t0])
        let carol = Fixture.directory("carol", deviceID: "c1", keys: [.generate()], at: [t0])
        // Each run finds a first contact, then pins it once its message is sent.
        guard case .firstContact(let bobs) = try first.pins.checkBeforeSendingCopy(bob, now: t0),
            case .firstContact(let carols) = try second.pins.checkBeforeSendingCopy(carol, now: t0)
        else {
            Issue.record("expected first contacts")
            return
        }
        first.pin("bob", bobs, now: t0)
        second.pin("carol", carols, now: t0)
        try first.save()
        try second.save()
        let kept = try store.loadPins()
        #expect(Set(kept.contacts.keys) == ["bob", "carol"])
        #expect(second.contacts.keys.sorted() == ["bob", "carol"], "a save adopts the pins as kept")
    }

    @Test func aSaveWritesOnlyWhatThisBookChanged() throws {
        let store = MemoryPinStore()
        let k1 = Identity.generate()
        let k2 = Identity.generate()
        var setup = try ContactBook(store: store)
        let old = Fixture.directory("bob", deviceID: "b1", keys: [k1], at: [t0])
        setup.pin("bob", try KeyPins.devices(of: old, ownUsername: "alice", ownDeviceID: "a1", ownKeyID: nil), now: t0)
        try setup.save()

        // One run loads the pins and changes nothing about bob; meanwhile another run trusts bob's new key.
        var stale = try ContactBook(store: store)
        var trusting = try ContactBook(store: store)
        let replaced = Fixture.directory("bob", deviceID: "b1", keys: [k2], at: [t0])
        trusting.pin(
            "bob",
            try KeyPins.devices(of: replaced, ownUsername: "alice", ownDeviceID: "a1", ownKeyID: nil),
            now: t0 + 60
        )
        try trusting.save()
        let carol = Fixture.directory("carol", deviceID: "c1", keys: [.generate()], at: [t0])
        stale.pin(
            "carol",
            try KeyPins.devices(of: carol, ownUsername: "alice", ownDeviceID: "a1", ownKeyID: nil),
            now: t0
        )
        #expect(stale.changedUsers == ["carol"])
        try stale.save()
        let kept = try store.loadPins()
        #expect(kept.contacts["bob"]?.devices.map(\.signingKeyId) == [Fixture.id(k2.publicKey)], "the trust stays")
        #expect(kept.contacts["carol"] != nil)
    }

    @Test func aChangedKeyIsRefusedNamingBothFingerprints() throws {
        let store = MemoryPinStore()
        let k1 = Identity.generate()
        let mallory = Identity.generate()
        var book = try ContactBook(store: store)
        let dir = Fixture.directory("bob", deviceID: "b1", keys: [k1], at: [t0])
        guard
            case .firstContact(let devices) = try book.checkBeforeSending(
                dir,
                ownUsername: "alice",
                ownDeviceID: "a1",
                ownKeyID: nil,
                now: t0
            )
        else {
            Issue.record("expected a first contact")
            return
        }
        book.pin("bob", devices, now: t0)
        try book.save()

        // The server swaps in another key without a rotation signed by the pinned one.
        var swapped = try ContactBook(store: store)
        let forged = Fixture.directory("bob", deviceID: "b1", keys: [mallory], at: [t0])
        do {
            _ = try swapped.checkBeforeSending(forged, ownUsername: "alice", ownDeviceID: "a1", ownKeyID: nil, now: t0)
            Issue.record("a changed key was accepted")
        } catch PinError.changed(let user, let own, _, let changes) {
            #expect(user == "bob" && !own)
            guard case .changed(let before, let after)? = changes.first, changes.count == 1 else {
                Issue.record("expected one changed device: \(changes)")
                return
            }
            #expect(before.signingKeyId == Fixture.id(k1.publicKey))
            #expect(after.signingKeyId == Fixture.id(mallory.publicKey))
        }
        #expect(try store.loadPins().contacts["bob"]?.devices == devices, "a refusal changes no pin")
    }

    @Test func aRotationChainEachKeySignedIsFollowedAndAForgedStepIsNot() throws {
        let keys = (0..<4).map { _ in Identity.generate() }
        let times = (0..<4).map { t0 + Double($0) * 3600 }
        let store = MemoryPinStore()
        var book = try ContactBook(store: store)
        let first = Fixture.directory("bob", deviceID: "b1", keys: [keys[0]], at: [times[0]])
        book.pin("bob", try KeyPins.devices(of: first, ownUsername: "alice", ownDeviceID: nil, ownKeyID: nil), now: t0)
        try book.save()

        // k0 -> k1 -> k2 -> k3, each signed by the key before: followed in one step.
        let chain = Fixture.directory("bob", deviceID: "b1", keys: keys, at: times)
        var following = try ContactBook(store: store)
        let check = try following.checkBeforeSending(
            chain,
            ownUsername: "alice",
            ownDeviceID: nil,
            ownKeyID: nil,
            now: times[3] + 1
        )
        #expect(
            check
                == .pinned(followed: [
                    .init(deviceID: "b1", from: Fixture.id(keys[0].publicKey), to: Fixture.id(keys[3].publicKey))
                ])
        )
        #expect(following.changedUsers == ["bob"])
        try following.save()
        let kept = try #require(try store.loadPins().contacts["bob"])
        #expect(kept.devices.map(\.signingKeyId) == [Fixture.id(keys[3].publicKey)])
        #expect(kept.retired?.map(\.signingKeyId) == keys[0..<3].map { Fixture.id($0.publicKey) })
        // A message k1 signed while it was current still verifies; one it signed after it was retired not.
        var reader = try ContactBook(store: store)
        let signer = try reader.signer(
            sender: "bob",
            keyID: Fixture.id(keys[1].publicKey),
            signedAt: times[1] + 60,
            directory: nil,
            ownUsername: "alice",
            ownDeviceID: nil,
            now: times[3] + 2
        )
        #expect(Fixture.id(signer.key) == Fixture.id(keys[1].publicKey) && signer.retiredAt == times[2])
        #expect(throws: PinError.self) {
            try reader.signer(
                sender: "bob",
                keyID: Fixture.id(keys[1].publicKey),
                signedAt: times[2] + 60,
                directory: nil,
                ownUsername: "alice",
                ownDeviceID: nil,
                now: times[3] + 2
            )
        }

        // The same chain with step 2 signed by a thief's key: nothing is followed, the change is refused.
        let thief = Identity.generate()
        let store2 = MemoryPinStore()
        var victim = try ContactBook(store: store2)
        victim.pin(
            "bob",
            try KeyPins.devices(of: first, ownUsername: "alice", ownDeviceID: nil, ownKeyID: nil),
            now: t0
        )
        try victim.save()
        let forged = Fixture.directory("bob", deviceID: "b1", keys: keys, at: times, forged: 2, forger: thief)
        #expect(throws: PinError.self) {
            _ = try victim.checkBeforeSending(
                forged,
                ownUsername: "alice",
                ownDeviceID: nil,
                ownKeyID: nil,
                now: times[3]
            )
        }
        #expect(try store2.loadPins().contacts["bob"]?.devices.map(\.signingKeyId) == [Fixture.id(keys[0].publicKey)])
    }
}

extension KeyPins {
    /// `checkBeforeSending` for "alice" on a copy: what a check would find, changing nothing.
    func checkBeforeSendingCopy(_ directory: UserDirectory, now: Date) throws -> SendCheck {
        var copy = self
        return try copy.checkBeforeSending(directory, ownUsername: "alice", ownDeviceID: "a1", ownKeyID: nil, now: now)
    }
}
