import CountersignAPI
import CountersignClient
import CountersignCrypto
import Foundation
import Testing

/// The SDK's pin rules (issue 19, 2 and 3), without a server: a message verifies only under a key pinned
/// for its sender; a rotation is followed only when the pinned key signed it; a retired key verifies only
/// what it signed before it was retired.
@Suite struct KeyPinsTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    struct FakeDevice {
        var id: String
        var keys: [Identity]
        var encryption: [Identity]
    }

    static func id(_ key: PublicKey) -> String { Hex.encode(key.fingerprint.bytes) }

    /// A directory for `user` with one device whose keys went through `device.keys` (rotations signed by
    /// each previous key unless `forged` names a step signed by `forger` instead).
    func directory(
        _ user: String,
        _ device: FakeDevice,
        at times: [Date],
        forged: Int? = nil,
        forger: Identity? = nil
    ) -> UserDirectory {
        var history: [KeyHistoryEntry] = []
        for (i, key) in device.keys.enumerated() {
            let enc = device.encryption[i].publicKey
            var signature: Base64URL?
            if i > 0 {
                let signer = i == forged ? forger! : device.keys[i - 1]
                let message = DeviceProof.rotationMessage(
                    deviceID: device.id,
                    oldSigningKey: device.keys[i - 1].publicKey,
                    newSigningKey: key.publicKey,
                    newEncryptionKey: enc
                )
                signature = Base64URL(try! signer.signature(for: message))
            }
            history.append(
                KeyHistoryEntry(
                    deviceId: device.id,
                    signingKeyId: Self.id(key.publicKey),
                    encryptionKeyId: Self.id(enc),
                    signingKey: Base64URL(key.publicKey.spkiDER),
                    addedAt: times[i],
                    retiredAt: i + 1 < device.keys.count ? times[i + 1] : nil,
                    retiredBecause: i + 1 < device.keys.count ? "rotated" : nil,
                    encryptionKey: Base64URL(enc.spkiDER),
                    rotationSignature: signature,
                    keyProof: Self.keyProof(device, i)
                )
            )
        }
        let last = device.keys.count - 1
        let current = DirectoryDevice(
            id: device.id,
            name: "laptop",
            signingKey: Base64URL(device.keys[last].publicKey.spkiDER),
            signingKeyId: Self.id(device.keys[last].publicKey),
            encryptionKey: Base64URL(device.encryption[last].publicKey.spkiDER),
            encryptionKeyId: Self.id(device.encryption[last].publicKey),
            createdAt: times[0],
            keysSince: times[last]
        )
        return UserDirectory(username: user, devices: [current], history: history)
    }

    static let challenge = [UInt8](repeating: 7, count: 32)

    /// Key `i`'s own proof (docs/PROTOCOL.md §1.3): the registration for the first, the rotation for the rest.
    static func keyProof(_ device: FakeDevice, _ i: Int, signer: Identity? = nil) -> KeyProof {
        let key = device.keys[i]
        let enc = device.encryption[i].publicKey
        if i == 0 {
            let message = DeviceProof.registrationMessage(
                challenge: challenge,
                accountID: "acct",
                signingKey: key.publicKey,
                encryptionKey: enc
            )
            return KeyProof(
                statement: KeyProof.registration,
                challenge: Base64URL(challenge),
                accountId: "acct",
                signature: Base64URL(try! (signer ?? key).signature(for: message))
            )
        }
        let message = DeviceProof.rotationMessage(
            deviceID: device.id,
            oldSigningKey: device.keys[i - 1].publicKey,
            newSigningKey: key.publicKey,
            newEncryptionKey: enc
        )
        return KeyProof(
            statement: KeyProof.rotation,
            previousSigningKey: Base64URL(device.keys[i - 1].publicKey.spkiDER),
            signature: Base64URL(try! (signer ?? key).signature(for: message))
        )
    }

    @Test func aKeyThatIsNotPinnedIsRefusedEvenWhenTheServerListsItInTheHistory() throws {
        let k1 = Identity.generate()
        let mallory = Identity.generate()
        var pins = KeyPins()
        let alice = FakeDevice(id: "a1", keys: [k1], encryption: [k1])
        let first = try pins.signer(
            sender: "alice",
            keyID: Self.id(k1.publicKey),
            signedAt: t0,
            directory: directory("alice", alice, at: [t0]),
            ownUsername: "bob",
            ownDeviceID: "b1",
            now: t0
        )
        #expect(first.firstContact?.count == 1 && Self.id(first.key) == Self.id(k1.publicKey))
        // The server slips mallory's key into alice's history as a key she "rotated" away.
        var lying = directory("alice", alice, at: [t0])
        lying.history.insert(
            KeyHistoryEntry(
                deviceId: "a1",
                signingKeyId: Self.id(mallory.publicKey),
                encryptionKeyId: Self.id(mallory.publicKey),
                signingKey: Base64URL(mallory.publicKey.spkiDER),
                addedAt: t0 - 100,
                retiredAt: t0 + 10_000,
                retiredBecause: "rotated"
            ),
            at: 0
        )
        #expect(
            throws: PinError.unpinnedSigner(
                username: "alice",
                keyID: Self.id(mallory.publicKey),
                pinned: [Self.id(k1.publicKey)]
            )
        ) {
            try pins.signer(
                sender: "alice",
                keyID: Self.id(mallory.publicKey),
                signedAt: t0 + 5,
                directory: lying,
                ownUsername: "bob",
                ownDeviceID: "b1",
                now: t0 + 20
            )
        }
        // Offline, only the pins count: the same refusal, and alice's own key still verifies.
        #expect(throws: PinError.self) {
            try pins.signer(
                sender: "alice",
                keyID: Self.id(mallory.publicKey),
                signedAt: t0 + 5,
                directory: nil,
                ownUsername: "bob",
                ownDeviceID: "b1",
                now: t0 + 20
            )
        }
        #expect(
            try pins.signer(
                sender: "alice",
                keyID: Self.id(k1.publicKey),
                signedAt: t0 + 5,
                directory: nil,
                ownUsername: "bob",
                ownDeviceID: "b1",
                now: t0 + 20
            ).deviceID == "a1"
        )
        // Nothing pinned for someone, and no server to ask: refused.
        #expect(throws: PinError.notPinned(username: "carol")) {
            try pins.signer(
                sender: "carol",
                keyID: Self.id(k1.publicKey),
                signedAt: t0,
                directory: nil,
                ownUsername: "bob",
                ownDeviceID: "b1",
                now: t0
            )
        }
    }

    /// A server that keeps a device's real signing key (the one a safety number covers) but lists an
    /// encryption key of its own is refused at first contact, in the safety number's keys and before a send,
    /// whatever it does with the key's proof (docs/PROTOCOL.md §1.3).
    @Test func anEncryptionKeyTheSigningKeyNeverChoseIsRefused() throws {
        let k1 = Identity.generate()
        let e1 = Identity.generate()
        let k2 = Identity.generate()
        let e2 = Identity.generate()
        let server = Identity.generate()
        let alice = FakeDevice(id: "a1", keys: [k1], encryption: [e1])
        let rotated = FakeDevice(id: "a1", keys: [k1, k2], encryption: [e1, e2])
        func listed(_ d: UserDirectory) throws -> [PinnedDevice] {
            try KeyPins.devices(of: d, ownUsername: "bob", ownDeviceID: nil, ownKeyID: nil)
        }
        #expect(try listed(directory("alice", alice, at: [t0])).map(\.encryptionKeyId) == [Self.id(e1.publicKey)])
        #expect(
            try listed(directory("alice", rotated, at: [t0, t0 + 60])).map(\.encryptionKeyId) == [Self.id(e2.publicKey)]
        )

        let refused = PinError.unprovenKeys(username: "alice", deviceID: "a1", signingKeyID: Self.id(k1.publicKey))
        // The encryption key swapped, the history's proof kept (it names e1).
        var swapped = directory("alice", alice, at: [t0])
        swapped.devices[0].encryptionKey = Base64URL(server.publicKey.spkiDER)
        swapped.devices[0].encryptionKeyId = Self.id(server.publicKey)
        swapped.history[0].encryptionKey = Base64URL(server.publicKey.spkiDER)
        #expect(throws: refused) { try listed(swapped) }
        // No proof at all, a proof signed by another key, a tampered signature, a truncated one, another
        // account's challenge, an unknown statement.
        var bare = directory("alice", alice, at: [t0])
        bare.history[0].keyProof = nil
        #expect(throws: refused) { try listed(bare) }
        var forged = directory("alice", alice, at: [t0])
        forged.history[0].keyProof = Self.keyProof(alice, 0, signer: server)
        #expect(throws: refused) { try listed(forged) }
        var tampered = directory("alice", alice, at: [t0])
        var bytes = tampered.history[0].keyProof!.signature.bytes
        bytes[5] ^= 1
        tampered.history[0].keyProof!.signature = Base64URL(bytes)
        #expect(throws: refused) { try listed(tampered) }
        var truncated = directory("alice", alice, at: [t0])
        truncated.history[0].keyProof!.signature = Base64URL(Array(bytes.prefix(63)))
        #expect(throws: refused) { try listed(truncated) }
        var otherAccount = directory("alice", alice, at: [t0])
        otherAccount.history[0].keyProof!.accountId = "another"
        #expect(throws: refused) { try listed(otherAccount) }
        // An account ID longer than any statement takes is refused, not a trap in the message builder.
        var huge = directory("alice", alice, at: [t0])
        huge.history[0].keyProof!.accountId = String(repeating: "a", count: 70_000)
        #expect(throws: refused) { try listed(huge) }
        var unknown = directory("alice", alice, at: [t0])
        unknown.history[0].keyProof!.statement = "vouch"
        #expect(throws: refused) { try listed(unknown) }
        // A rotation's proof from the key it replaced is not the new key's own.
        var oldKeySigned = directory("alice", rotated, at: [t0, t0 + 60])
        oldKeySigned.history[1].keyProof = Self.keyProof(rotated, 1, signer: k1)
        #expect(
            throws: PinError.unprovenKeys(username: "alice", deviceID: "a1", signingKeyID: Self.id(k2.publicKey))
        ) { try listed(oldKeySigned) }

        // The first message from the swapped directory is not read, and nothing is pinned.
        var pins = KeyPins()
        #expect(throws: refused) {
            try pins.signer(
                sender: "alice",
                keyID: Self.id(k1.publicKey),
                signedAt: t0,
                directory: swapped,
                ownUsername: "bob",
                ownDeviceID: "b1",
                now: t0
            )
        }
        #expect(pins.contacts["alice"] == nil)
        // Pinned from the honest directory, the swap is refused before a send too.
        pins.pin("alice", try listed(directory("alice", alice, at: [t0])), now: t0)
        #expect(throws: refused) {
            try pins.checkBeforeSending(swapped, ownUsername: "bob", ownDeviceID: "b1", ownKeyID: nil, now: t0)
        }
    }

    @Test func aRotationSignedByThePinnedKeyIsFollowedAndTheOldKeyVerifiesOnlyWhatItSignedBefore() throws {
        let k1 = Identity.generate()
        let k2 = Identity.generate()
        let k3 = Identity.generate()
        let before = FakeDevice(id: "a1", keys: [k1], encryption: [k1])
        var pins = KeyPins()
        pins.pin(
            "alice",
            try KeyPins.devices(
                of: directory("alice", before, at: [t0]),
                ownUsername: "bob",
                ownDeviceID: nil,
                ownKeyID: nil
            ),
            now: t0
        )
        // Two rotations, each signed by the key before: followed in one step.
        let after = FakeDevice(id: "a1", keys: [k1, k2, k3], encryption: [k1, k2, k3])
        let dir = directory("alice", after, at: [t0, t0 + 100, t0 + 200])
        let check = try pins.checkBeforeSending(dir, ownUsername: "bob", ownDeviceID: nil, ownKeyID: nil, now: t0 + 300)
        #expect(
            check == .pinned(followed: [.init(deviceID: "a1", from: Self.id(k1.publicKey), to: Self.id(k3.publicKey))])
        )
        #expect(pins.contacts["alice"]?.devices.map(\.signingKeyId) == [Self.id(k3.publicKey)])
        #expect(pins.contacts["alice"]?.retired?.map(\.signingKeyId) == [Self.id(k1.publicKey), Self.id(k2.publicKey)])
        // k1 verifies a message signed before its retirement (t0 + 100), not one signed after.
        #expect(
            try pins.signer(
                sender: "alice",
                keyID: Self.id(k1.publicKey),
                signedAt: t0 + 50,
                directory: nil,
                ownUsername: "bob",
                ownDeviceID: nil,
                now: t0 + 400
            ).retiredAt == t0 + 100
        )
        #expect(
            throws: PinError.signerRetired(
                username: "alice",
                keyID: Self.id(k1.publicKey),
                retiredAt: t0 + 100,
                signedAt: t0 + 150
            )
        ) {
            try pins.signer(
                sender: "alice",
                keyID: Self.id(k1.publicKey),
                signedAt: t0 + 150,
                directory: nil,
                ownUsername: "bob",
                ownDeviceID: nil,
                now: t0 + 400
            )
        }
        #expect(
            Self.id(
                try pins.signer(
                    sender: "alice",
                    keyID: Self.id(k3.publicKey),
                    signedAt: t0 + 250,
                    directory: dir,
                    ownUsername: "bob",
                    ownDeviceID: nil,
                    now: t0 + 400
                ).key
            ) == Self.id(k3.publicKey)
        )
    }

    /// A message signed 200 ms before its key was replaced, in the same second, verifies: the directory's
    /// dates keep their milliseconds on the wire (with whole seconds the retirement read as before it).
    @Test func aMessageSignedInTheSecondOfItsKeysRotationVerifiesThroughTheWire() throws {
        let k1 = Identity.generate()
        let k2 = Identity.generate()
        var pins = KeyPins()
        pins.pin(
            "alice",
            try KeyPins.devices(
                of: directory("alice", FakeDevice(id: "a1", keys: [k1], encryption: [k1]), at: [t0]),
                ownUsername: "bob",
                ownDeviceID: nil,
                ownKeyID: nil
            ),
            now: t0
        )
        let rotatedAt = t0 + 100.4
        let signedAt = t0 + 100.2
        let sent = directory(
            "alice",
            FakeDevice(id: "a1", keys: [k1, k2], encryption: [k1, k2]),
            at: [t0, rotatedAt]
        )
        let dir = try APICoding.decoder().decode(UserDirectory.self, from: try APICoding.encoder().encode(sent))
        _ = try pins.checkBeforeSending(dir, ownUsername: "bob", ownDeviceID: nil, ownKeyID: nil, now: t0 + 200)
        for directory in [dir, nil] {
            let signer = try pins.signer(
                sender: "alice",
                keyID: Self.id(k1.publicKey),
                signedAt: signedAt,
                directory: directory,
                ownUsername: "bob",
                ownDeviceID: nil,
                now: t0 + 300
            )
            #expect(abs(try #require(signer.retiredAt).timeIntervalSince(rotatedAt)) < 0.001)
        }
        #expect(throws: PinError.self) {
            try pins.signer(
                sender: "alice",
                keyID: Self.id(k1.publicKey),
                signedAt: t0 + 100.6,
                directory: dir,
                ownUsername: "bob",
                ownDeviceID: nil,
                now: t0 + 300
            )
        }
    }

    @Test func aRotationTheServerForgedIsNotFollowed() throws {
        let k1 = Identity.generate()
        let k2 = Identity.generate()
        let forger = Identity.generate()
        var pins = KeyPins()
        pins.pin(
            "alice",
            try KeyPins.devices(
                of: directory("alice", FakeDevice(id: "a1", keys: [k1], encryption: [k1]), at: [t0]),
                ownUsername: "bob",
                ownDeviceID: nil,
                ownKeyID: nil
            ),
            now: t0
        )
        let forged = directory(
            "alice",
            FakeDevice(id: "a1", keys: [k1, k2], encryption: [k1, k2]),
            at: [t0, t0 + 100],
            forged: 1,
            forger: forger
        )
        #expect(throws: PinError.self) {
            try pins.checkBeforeSending(forged, ownUsername: "bob", ownDeviceID: nil, ownKeyID: nil, now: t0 + 200)
        }
        // A message signed by the forged key: the directory lists it, so it is named as from alice's
        // unverified device (never as from alice); without the directory, a key nobody pinned.
        let listed = try #require(forged.devices.first)
        #expect(
            throws: PinError.unverifiedDevice(
                username: "alice",
                device: PinnedDevice(
                    id: "a1",
                    name: listed.name,
                    signingKeyId: Self.id(k2.publicKey),
                    encryptionKeyId: Self.id(k2.publicKey),
                    signingKey: listed.signingKey
                )
            )
        ) {
            try pins.signer(
                sender: "alice",
                keyID: Self.id(k2.publicKey),
                signedAt: t0 + 150,
                directory: forged,
                ownUsername: "bob",
                ownDeviceID: nil,
                now: t0 + 200
            )
        }
        #expect(
            throws: PinError.unpinnedSigner(
                username: "alice",
                keyID: Self.id(k2.publicKey),
                pinned: [Self.id(k1.publicKey)]
            )
        ) {
            try pins.signer(
                sender: "alice",
                keyID: Self.id(k2.publicKey),
                signedAt: t0 + 150,
                directory: nil,
                ownUsername: "bob",
                ownDeviceID: nil,
                now: t0 + 200
            )
        }
        // A bit flipped in a real rotation signature: not followed either.
        var flipped = directory(
            "alice",
            FakeDevice(id: "a1", keys: [k1, k2], encryption: [k1, k2]),
            at: [t0, t0 + 100]
        )
        var sig = flipped.history[1].rotationSignature!.bytes
        sig[10] ^= 0x01
        flipped.history[1].rotationSignature = Base64URL(sig)
        #expect(pins.followRotations(flipped, now: t0 + 200).isEmpty)
        // A rotation to a new encryption key the signature does not cover: not followed.
        var swapped = directory(
            "alice",
            FakeDevice(id: "a1", keys: [k1, k2], encryption: [k1, k2]),
            at: [t0, t0 + 100]
        )
        let other = Identity.generate().publicKey
        swapped.devices[0].encryptionKey = Base64URL(other.spkiDER)
        swapped.history[1].encryptionKey = Base64URL(other.spkiDER)
        #expect(pins.followRotations(swapped, now: t0 + 200).isEmpty)
        #expect(pins.contacts["alice"]?.devices.map(\.signingKeyId) == [Self.id(k1.publicKey)])
    }

    /// The server's time for a retirement cannot stretch a key's life past when this device saw it retired.
    @Test func aRetirementIsNeverLaterThanWhenItWasSeen() throws {
        let k1 = Identity.generate()
        let k2 = Identity.generate()
        var pins = KeyPins()
        pins.pin(
            "alice",
            try KeyPins.devices(
                of: directory("alice", FakeDevice(id: "a1", keys: [k1], encryption: [k1]), at: [t0]),
                ownUsername: "bob",
                ownDeviceID: nil,
                ownKeyID: nil
            ),
            now: t0
        )
        var late = directory("alice", FakeDevice(id: "a1", keys: [k1, k2], encryption: [k1, k2]), at: [t0, t0 + 100])
        late.history[0].retiredAt = t0 + 1_000_000
        late.history[1].addedAt = t0 + 1_000_000
        #expect(pins.followRotations(late, now: t0 + 200).count == 1)
        #expect(pins.contacts["alice"]?.retired?.first?.retiredAt == t0 + 200)
    }

    /// A pinned key that signed two successors (the owner's rotation and a thief's): neither is followed.
    @Test func aForkedRotationIsNotFollowed() throws {
        let k1 = Identity.generate()
        let k2 = Identity.generate()
        let k3 = Identity.generate()
        var pins = KeyPins()
        pins.pin(
            "alice",
            try KeyPins.devices(
                of: directory("alice", FakeDevice(id: "a1", keys: [k1], encryption: [k1]), at: [t0]),
                ownUsername: "bob",
                ownDeviceID: nil,
                ownKeyID: nil
            ),
            now: t0
        )
        var forked = directory(
            "alice",
            FakeDevice(id: "a1", keys: [k1, k3], encryption: [k1, k3]),
            at: [t0, t0 + 200]
        )
        let other = directory(
            "alice",
            FakeDevice(id: "a1", keys: [k1, k2], encryption: [k1, k2]),
            at: [t0, t0 + 100]
        )
        forked.history.insert(other.history[1], at: 1)
        #expect(pins.followRotations(forked, now: t0 + 300).isEmpty)
        #expect(
            pins.followRotations(
                directory("alice", FakeDevice(id: "a1", keys: [k1, k3], encryption: [k1, k3]), at: [t0, t0 + 200]),
                now: t0 + 300
            ).count == 1,
            "the same rotation alone is followed"
        )
    }
}
