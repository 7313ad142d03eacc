import CountersignCrypto
import Foundation

/// `key_pins.json`: how a device's pins (trust on first use, docs/PROTOCOL.md §1.2) must treat what a key
/// directory says, as cases both the SDK's `KeyPins` and the web client's `pins.js` run. Each case gives the
/// pins before (or none), the directory as a server sends it, the clock, and what must come of the check
/// before sending and of looking up a message's signer. The expectations are written here, from the rules,
/// not read off either implementation. Keys come from fixed seeds; ECDSA signatures differ per run.
package enum PinVectorGenerator {
    static let t0 = 1_800_000_000.0  // 2027-01-15T08:00:00Z

    struct Keys {
        var signing: Identity
        var encryption: Identity
        init(_ seed: String) {
            signing = Seeded.identity("pins \(seed) signing")
            encryption = Seeded.identity("pins \(seed) encryption")
        }
        var signingID: String { Hex.encode(signing.publicKey.fingerprint.bytes) }
        var encryptionID: String { Hex.encode(encryption.publicKey.fingerprint.bytes) }
    }

    static func b64(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func date(_ seconds: Double) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        f.timeZone = TimeZone(identifier: "UTC")
        return f.string(from: Date(timeIntervalSince1970: t0 + seconds))
    }

    /// One key a device had, as the directory's history lists it.
    struct Entry {
        var device: String
        var keys: Keys
        var added: Double
        var retired: Double? = nil
        var because: String? = nil
        var rotationSignature: [UInt8]? = nil
        var vouch: [String: Any]? = nil
        /// The keys the key's own proof (docs/PROTOCOL.md §1.3) was made over, when not `keys` (a server's
        /// swap); `proof: false` lists none.
        var proofKeys: Keys? = nil
        var proof = true
        /// A rotation proof over another device ID; a proof whose S is replaced by n − S (high S).
        var proofDevice: String? = nil
        var highS = false

        var json: [String: Any] {
            var o: [String: Any] = [
                "deviceId": device, "signingKeyId": keys.signingID, "encryptionKeyId": keys.encryptionID,
                "signingKey": b64(keys.signing.publicKey.spkiDER),
                "encryptionKey": b64(keys.encryption.publicKey.spkiDER),
                "addedAt": date(added),
            ]
            if let retired { o["retiredAt"] = date(retired) }
            if let because { o["retiredBecause"] = because }
            if let rotationSignature { o["rotationSignature"] = b64(rotationSignature) }
            if let vouch { o["vouch"] = vouch }
            return o
        }
    }

    struct Listed {
        var id: String
        var name: String
        var keys: Keys
        var created: Double
        var keysSince: Double
        var json: [String: Any] {
            [
                "id": id, "name": name, "signingKey": b64(keys.signing.publicKey.spkiDER),
                "signingKeyId": keys.signingID,
                "encryptionKey": b64(keys.encryption.publicKey.spkiDER), "encryptionKeyId": keys.encryptionID,
                "createdAt": date(created), "keysSince": date(keysSince),
            ]
        }
    }

    static let challenge = [UInt8](repeating: 0x5c, count: 32)
    static let accountID = "acct-1"

    /// The directory as a server sends it; each key's own proof is a registration (the first key of its
    /// device) or a rotation from the device's key listed before it, signed by the key itself.
    static func directory(_ user: String, _ devices: [Listed], _ history: [Entry]) -> [String: Any] {
        var previous: [String: Keys] = [:]
        let entries = history.map { e -> [String: Any] in
            var o = e.json
            let k = e.proofKeys ?? e.keys
            if e.proof, let before = previous[e.device] {
                let message = DeviceProof.rotationMessage(
                    deviceID: e.proofDevice ?? e.device,
                    oldSigningKey: before.signing.publicKey,
                    newSigningKey: k.signing.publicKey,
                    newEncryptionKey: k.encryption.publicKey
                )
                o["keyProof"] = [
                    "statement": "rotation", "previousSigningKey": b64(before.signing.publicKey.spkiDER),
                    "signature": b64(try! k.signing.signature(for: message)),
                ]
            } else if e.proof {
                let message = DeviceProof.registrationMessage(
                    challenge: challenge,
                    accountID: accountID,
                    signingKey: k.signing.publicKey,
                    encryptionKey: k.encryption.publicKey
                )
                let signature = try! k.signing.signature(for: message)
                o["keyProof"] = [
                    "statement": "registration", "challenge": b64(challenge), "accountId": accountID,
                    "signature": b64(e.highS ? Self.highS(signature) : signature),
                ]
            }
            previous[e.device] = e.keys
            return o
        }
        return ["username": user, "devices": devices.map(\.json), "history": entries]
    }

    /// A vouch by `voucher` (its key `by`) for `device`'s keys `keys`, signed by `signer` (default `by`).
    static func vouch(
        user: String = "bob",
        voucher: String,
        by: Keys,
        device: String,
        keys: Keys,
        at seconds: Double,
        signer: Identity? = nil
    ) throws -> [String: Any] {
        let at = Int64(t0 + seconds)
        let message = DeviceProof.vouchMessage(
            username: user,
            voucherDeviceID: voucher,
            voucherSigningKey: by.signing.publicKey,
            deviceID: device,
            signingKey: keys.signing.publicKey,
            encryptionKey: keys.encryption.publicKey,
            vouchedAt: at
        )
        return [
            "deviceId": voucher, "vouchedAt": at, "signature": b64(try (signer ?? by.signing).signature(for: message)),
        ]
    }

    /// An authenticator `id` (keys `keys`) listed as an approver, endorsed by `endorser` (its key `by`) at
    /// `seconds`; the endorsement made over `over`'s signing key when given (a server's swap).
    static func approver(
        _ id: String,
        name: String,
        keys: Keys,
        created: Double,
        endorser: String,
        by: Keys,
        at seconds: Double,
        over: Keys? = nil
    ) throws -> [String: Any] {
        let at = Int64(t0 + seconds)
        let message = DeviceProof.endorsementMessage(
            username: "bob",
            endorserDeviceID: endorser,
            endorserSigningKey: by.signing.publicKey,
            approverDeviceID: id,
            approverSigningKey: (over ?? keys).signing.publicKey,
            endorsedAt: at
        )
        return [
            "id": id, "name": name, "signingKey": b64(keys.signing.publicKey.spkiDER),
            "signingKeyId": keys.signingID, "createdAt": date(created),
            "endorsement": [
                "deviceId": endorser, "endorsedAt": at, "signature": b64(try by.signing.signature(for: message)),
            ] as [String: Any],
        ]
    }

    /// `directory` with `approvers` listed.
    static func with(_ directory: [String: Any], approvers: [[String: Any]]) -> [String: Any] {
        var d = directory
        d["approvers"] = approvers
        return d
    }

    /// The same signature with S replaced by n − S: valid for plain ECDSA, refused by SPEC §1's low-S rule.
    static func highS(_ signature: [UInt8]) -> [UInt8] {
        let n: [UInt8] = Hex.decode("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")!
        var s = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for i in stride(from: 31, through: 0, by: -1) {
            let d = Int(n[i]) - Int(signature[32 + i]) - borrow
            s[i] = UInt8((d + 256) % 256)
            borrow = d < 0 ? 1 : 0
        }
        return Array(signature[0..<32]) + s
    }

    static func rotation(device: String, from old: Keys, to new: Keys) throws -> [UInt8] {
        try old.signing.signature(
            for: DeviceProof.rotationMessage(
                deviceID: device,
                oldSigningKey: old.signing.publicKey,
                newSigningKey: new.signing.publicKey,
                newEncryptionKey: new.encryption.publicKey
            )
        )
    }

    static func pinned(
        _ user: String,
        _ devices: [(String, String, Keys)],
        verified: Bool = false,
        retired: [(String, Keys, Double)] = [],
        trusted: Double = -86_400
    ) -> [String: Any] {
        [
            "username": user, "verified": verified, "trustedAt": date(trusted),
            "retired": retired.map { id, k, at in
                ["deviceId": id, "signingKey": b64(k.signing.publicKey.spkiDER), "retiredAt": date(at)] as [String: Any]
            },
            "devices": devices.map { id, name, k in
                [
                    "id": id, "name": name, "signingKey": b64(k.signing.publicKey.spkiDER),
                    "encryptionKey": b64(k.encryption.publicKey.spkiDER),
                ]
            },
        ]
    }

    static func signer(_ keys: Keys, at seconds: Double, _ outcome: String) -> [String: Any] {
        ["keyId": keys.signingID, "signedAt": date(seconds), "outcome": outcome]
    }

    static func send(
        _ outcome: String,
        devices: [String],
        linked: [String] = [],
        rotated: [String] = [],
        removed: [String] = []
    ) -> [String: Any] {
        ["outcome": outcome, "devices": devices, "linked": linked, "rotated": rotated, "removed": removed]
    }

    package static func json() throws -> String {
        let b1 = Keys("b1")
        let b2 = Keys("b2")
        let b3 = Keys("b3")
        let bx = Keys("bx")
        let thief = Keys("thief")
        let b2r = Keys("b2 rotated")
        let b1r = Keys("b1 rotated")
        let c1 = Keys("c1")
        let carol: [String: Any] = [
            "username": "carol", "deviceId": "c1", "signingKey": b64(c1.signing.publicKey.spkiDER),
        ]
        let laptop = Listed(id: "b1", name: "Laptop", keys: b1, created: 0, keysSince: 0)
        let phone = Listed(id: "b2", name: "Phone", keys: b2, created: 100, keysSince: 100)
        let e1 = Entry(device: "b1", keys: b1, added: 0)
        let pinsB1 = pinned("bob", [("b1", "Laptop", b1)])
        var cases: [[String: Any]] = []
        func add(
            _ name: String,
            own: [String: Any] = carol,
            pinned: [String: Any]?,
            _ directory: [String: Any],
            now: Double = 1_000,
            send: [String: Any],
            signers: [[String: Any]] = []
        ) {
            cases.append([
                "name": name, "own": own, "pinned": pinned ?? NSNull(), "directory": directory, "now": date(now),
                "send": send, "signers": signers,
            ])
        }

        add(
            "a first contact pins every listed device",
            pinned: nil,
            directory("bob", [laptop], [e1]),
            send: send("first-contact", devices: ["b1"]),
            signers: [signer(b1, at: 500, "pinned"), signer(bx, at: 500, "refused")]
        )
        let v2 = try vouch(voucher: "b1", by: b1, device: "b2", keys: b2, at: 100)
        add(
            "a device linked by a pinned device is followed",
            pinned: pinsB1,
            directory("bob", [laptop, phone], [e1, Entry(device: "b2", keys: b2, added: 100, vouch: v2)]),
            send: send("pinned", devices: ["b1", "b2"], linked: ["b2"]),
            signers: [signer(b2, at: 500, "pinned"), signer(b1, at: 500, "pinned")]
        )
        let tablet = Listed(id: "b3", name: "Tablet", keys: b3, created: 200, keysSince: 200)
        add(
            "a device linked by a device linked in the same look is followed",
            pinned: pinsB1,
            directory(
                "bob",
                [laptop, phone, tablet],
                [
                    e1, Entry(device: "b2", keys: b2, added: 100, vouch: v2),
                    Entry(
                        device: "b3",
                        keys: b3,
                        added: 200,
                        vouch: try vouch(voucher: "b2", by: b2, device: "b3", keys: b3, at: 200)
                    ),
                ]
            ),
            send: send("pinned", devices: ["b1", "b2", "b3"], linked: ["b2", "b3"]),
            signers: [signer(b3, at: 500, "pinned")]
        )
        let slipped = Listed(id: "bx", name: "Laptop", keys: bx, created: 150, keysSince: 150)
        add(
            "a device nobody pinned approved, and one it approved, wait for the user",
            pinned: pinsB1,
            directory(
                "bob",
                [laptop, slipped, tablet],
                [
                    e1, Entry(device: "bx", keys: bx, added: 150),
                    Entry(
                        device: "b3",
                        keys: b3,
                        added: 200,
                        vouch: try vouch(voucher: "bx", by: bx, device: "b3", keys: b3, at: 200)
                    ),
                ]
            ),
            send: send("changed", devices: ["b1"]),
            signers: [
                signer(bx, at: 500, "unverified"), signer(b3, at: 500, "unverified"), signer(b1, at: 500, "pinned"),
            ]
        )
        add(
            "a vouch claiming a pinned device but signed by another key is refused",
            pinned: pinsB1,
            directory(
                "bob",
                [laptop, phone],
                [
                    e1,
                    Entry(
                        device: "b2",
                        keys: b2,
                        added: 100,
                        vouch: try vouch(voucher: "b1", by: b1, device: "b2", keys: b2, at: 100, signer: thief.signing)
                    ),
                ]
            ),
            send: send("changed", devices: ["b1"]),
            signers: [signer(b2, at: 500, "unverified")]
        )
        // The vouch covers b2's signing key with the thief's encryption key; the directory lists b2's own.
        add(
            "a vouch over other keys than the ones listed is refused",
            pinned: pinsB1,
            directory(
                "bob",
                [laptop, phone],
                [
                    e1,
                    Entry(
                        device: "b2",
                        keys: b2,
                        added: 100,
                        vouch: try vouch(
                            voucher: "b1",
                            by: b1,
                            device: "b2",
                            keys: Keys.mixed(b2, thief),
                            at: 100
                        )
                    ),
                ]
            ),
            send: send("changed", devices: ["b1"])
        )
        add(
            "a vouch made for another account is refused",
            pinned: pinsB1,
            directory(
                "bob",
                [laptop, phone],
                [
                    e1,
                    Entry(
                        device: "b2",
                        keys: b2,
                        added: 100,
                        vouch: try vouch(user: "alice", voucher: "b1", by: b1, device: "b2", keys: b2, at: 100)
                    ),
                ]
            ),
            send: send("changed", devices: ["b1"])
        )
        add(
            "a vouch signed more than five minutes ahead of the clock is refused",
            pinned: pinsB1,
            directory(
                "bob",
                [laptop, phone],
                [
                    e1,
                    Entry(
                        device: "b2",
                        keys: b2,
                        added: 100,
                        vouch: try vouch(voucher: "b1", by: b1, device: "b2", keys: b2, at: 4_000)
                    ),
                ]
            ),
            send: send("changed", devices: ["b1"])
        )
        let phoneRotated = Listed(id: "b2", name: "Phone", keys: b2r, created: 100, keysSince: 300)
        add(
            "a linked device that rotated its key since is followed through the rotation",
            pinned: pinsB1,
            directory(
                "bob",
                [laptop, phoneRotated],
                [
                    e1, Entry(device: "b2", keys: b2, added: 100, retired: 300, because: "rotated", vouch: v2),
                    Entry(
                        device: "b2",
                        keys: b2r,
                        added: 300,
                        rotationSignature: try rotation(device: "b2", from: b2, to: b2r)
                    ),
                ]
            ),
            send: send("pinned", devices: ["b1", "b2"], linked: ["b2"]),
            signers: [signer(b2r, at: 500, "pinned"), signer(b2, at: 200, "pinned"), signer(b2, at: 400, "retired")]
        )
        add(
            "a device no longer listed is followed: no longer sealed to, and its key verifies only what it signed before",
            pinned: pinned("bob", [("b1", "Laptop", b1), ("b2", "Phone", b2)]),
            directory(
                "bob",
                [laptop],
                [e1, Entry(device: "b2", keys: b2, added: 100, retired: 600, because: "revoked")]
            ),
            send: send("pinned", devices: ["b1"], removed: ["b2"]),
            signers: [signer(b2, at: 500, "pinned"), signer(b2, at: 700, "retired")]
        )
        add(
            "a verified contact's vouched device waits for the user",
            pinned: pinned("bob", [("b1", "Laptop", b1)], verified: true),
            directory("bob", [laptop, phone], [e1, Entry(device: "b2", keys: b2, added: 100, vouch: v2)]),
            send: send("changed", devices: ["b1"]),
            signers: [signer(b2, at: 500, "unverified")]
        )
        let laptopRotated = Listed(id: "b1", name: "Laptop", keys: b1r, created: 0, keysSince: 300)
        // b1's history through its signed rotation to b1r at 300 (the new key's proof made for `proofDevice`).
        func b1Rotated(proofDevice: String? = nil) throws -> [Entry] {
            [
                Entry(device: "b1", keys: b1, added: 0, retired: 300, because: "rotated"),
                Entry(
                    device: "b1",
                    keys: b1r,
                    added: 300,
                    rotationSignature: try rotation(device: "b1", from: b1, to: b1r),
                    proofDevice: proofDevice
                ),
            ]
        }
        add(
            "a verified contact's signed rotation waits for the user too",
            pinned: pinned("bob", [("b1", "Laptop", b1)], verified: true),
            directory(
                "bob",
                [laptopRotated],
                try b1Rotated()
            ),
            send: send("changed", devices: ["b1"])
        )
        add(
            "the same signed rotation of a contact not verified is followed",
            pinned: pinsB1,
            directory(
                "bob",
                [laptopRotated],
                try b1Rotated()
            ),
            send: send("pinned", devices: ["b1"], rotated: ["b1"])
        )
        // A vouch dated before a rotation, by the rotated-away key: followed when this look follows that
        // rotation too; refused when the key was retired at an earlier look (its holder picks the date).
        let rotatedThenLinked = directory(
            "bob",
            [laptopRotated, phone],
            try b1Rotated() + [
                Entry(
                    device: "b2",
                    keys: b2,
                    added: 100,
                    vouch: try vouch(voucher: "b1", by: b1, device: "b2", keys: b2, at: 200)
                )
            ]
        )
        add(
            "a link by a key rotated away in the same look is followed",
            pinned: pinsB1,
            rotatedThenLinked,
            send: send("pinned", devices: ["b1", "b2"], linked: ["b2"], rotated: ["b1"])
        )
        add(
            "a key retired at an earlier look never vouches, whatever time it signs",
            pinned: pinned("bob", [("b1", "Laptop", b1r)], retired: [("b1", b1, 300)]),
            rotatedThenLinked,
            send: send("changed", devices: ["b1"]),
            signers: [signer(b2, at: 500, "unverified"), signer(b1, at: 250, "pinned")]
        )
        add(
            "a removed device listed again with its old vouch waits for the user",
            pinned: pinned("bob", [("b1", "Laptop", b1)], retired: [("b2", b2, 600)]),
            directory("bob", [laptop, phone], [e1, Entry(device: "b2", keys: b2, added: 100, vouch: v2)]),
            send: send("changed", devices: ["b1"]),
            signers: [signer(b2, at: 500, "pinned"), signer(b2, at: 700, "retired")]
        )
        add(
            "a removal cannot void what the device signed while it was known to be listed",
            pinned: pinned("bob", [("b1", "Laptop", b1), ("b2", "Phone", b2)], trusted: 400),
            directory(
                "bob",
                [laptop],
                [e1, Entry(device: "b2", keys: b2, added: 100, retired: -1_000, because: "revoked")]
            ),
            send: send("pinned", devices: ["b1"], removed: ["b2"]),
            signers: [signer(b2, at: 300, "pinned"), signer(b2, at: 450, "retired")]
        )
        // The server keeps b1's signing key (the one a safety number covers) and lists an encryption key of
        // its own; the key's proof names b1's own. Refused at first contact, and once pinned.
        let swapped = Keys.mixed(b1, thief)
        let swappedLaptop = Listed(id: "b1", name: "Laptop", keys: swapped, created: 0, keysSince: 0)
        let swappedDirectory = directory(
            "bob",
            [swappedLaptop],
            [Entry(device: "b1", keys: swapped, added: 0, proofKeys: b1)]
        )
        add(
            "an encryption key the device's signing key never chose is refused at first contact",
            pinned: nil,
            swappedDirectory,
            send: send("refused", devices: []),
            signers: [signer(b1, at: 500, "refused")]
        )
        add(
            "an encryption key the device's signing key never chose is refused once pinned too",
            pinned: pinsB1,
            swappedDirectory,
            send: send("refused", devices: ["b1"])
        )
        add(
            "a device key listed without its own proof is refused",
            pinned: nil,
            directory("bob", [laptop], [Entry(device: "b1", keys: b1, added: 0, proof: false)]),
            send: send("refused", devices: [])
        )
        add(
            "a rotated key's proof is the new key's own signature naming its encryption key",
            pinned: nil,
            directory(
                "bob",
                [laptopRotated],
                try b1Rotated()
            ),
            send: send("first-contact", devices: ["b1"]),
            signers: [signer(b1r, at: 500, "pinned")]
        )
        add(
            "an encryption key swapped in the listing alone, the history and its proof left as they were, is refused",
            pinned: nil,
            directory("bob", [swappedLaptop], [e1]),
            send: send("refused", devices: [])
        )
        let cliLaptop = Listed(id: "b1", name: "Laptop", keys: Keys.single(b1), created: 0, keysSince: 0)
        add(
            "a device with one key for both needs no proof",
            pinned: nil,
            directory("bob", [cliLaptop], [Entry(device: "b1", keys: Keys.single(b1), added: 0, proof: false)]),
            send: send("first-contact", devices: ["b1"]),
            signers: [signer(b1, at: 500, "pinned")]
        )
        add(
            "a two-key device listed with its signing key for both (nobody could open it) is refused",
            pinned: nil,
            directory("bob", [cliLaptop], [Entry(device: "b1", keys: Keys.single(b1), added: 0, proofKeys: b1)]),
            send: send("refused", devices: [])
        )
        add(
            "a rotation proof made for another device is refused",
            pinned: nil,
            directory(
                "bob",
                [laptopRotated],
                try b1Rotated(proofDevice: "b2")
            ),
            send: send("refused", devices: [])
        )
        add(
            "a key proof with a high S is refused",
            pinned: nil,
            directory("bob", [laptop], [Entry(device: "b1", keys: b1, added: 0, highS: true)]),
            send: send("refused", devices: [])
        )
        // Bob's own device b1 (a CLI device: one key signs and opens) reads its own account: a device it
        // vouched for is simply his.
        let cli = Keys.single(b1)
        let ownLaptop = Listed(id: "b1", name: "Laptop", keys: cli, created: 0, keysSince: 0)
        add(
            "on the own account, a device this device linked is followed",
            own: [
                "username": "bob", "deviceId": "b1", "signingKey": b64(cli.signing.publicKey.spkiDER),
                "encryptionKey": b64(cli.encryption.publicKey.spkiDER),
            ],
            pinned: pinned("bob", []),
            directory(
                "bob",
                [ownLaptop, phone],
                [
                    Entry(device: "b1", keys: cli, added: 0),
                    Entry(
                        device: "b2",
                        keys: b2,
                        added: 100,
                        vouch: try vouch(voucher: "b1", by: cli, device: "b2", keys: b2, at: 100)
                    ),
                ]
            ),
            send: send("pinned", devices: ["b2"], linked: ["b2"]),
            signers: [signer(b2, at: 500, "pinned")]
        )
        // The paired authenticator approves too (docs/PROTOCOL.md §1.2): its vouch counts when a device the
        // pins trust endorsed its listed key.
        let a1 = Keys("a1")
        let ax = Keys("ax")
        let byApprover = Entry(
            device: "b2",
            keys: b2,
            added: 100,
            vouch: try vouch(voucher: "a1", by: a1, device: "b2", keys: b2, at: 100)
        )
        add(
            "a device linked by an authenticator a pinned device endorsed is followed",
            pinned: pinsB1,
            with(
                directory("bob", [laptop, phone], [e1, byApprover]),
                approvers: [try approver("a1", name: "Pocket", keys: a1, created: 50, endorser: "b1", by: b1, at: 60)]
            ),
            send: send("pinned", devices: ["b1", "b2"], linked: ["b2"]),
            signers: [signer(b2, at: 500, "pinned"), signer(a1, at: 500, "refused")]
        )
        add(
            "a device linked by an authenticator that a device nobody pinned endorsed waits for the user",
            pinned: pinsB1,
            with(
                directory(
                    "bob",
                    [laptop, Listed(id: "bx", name: "Laptop", keys: bx, created: 40, keysSince: 40), phone],
                    [e1, Entry(device: "bx", keys: bx, added: 40), byApprover]
                ),
                approvers: [try approver("a1", name: "Pocket", keys: a1, created: 50, endorser: "bx", by: bx, at: 60)]
            ),
            send: send("changed", devices: ["b1"]),
            signers: [signer(b2, at: 500, "unverified"), signer(b1, at: 500, "pinned")]
        )
        add(
            "an endorsement over another key than the approver's listed one is refused",
            pinned: pinsB1,
            with(
                directory("bob", [laptop, phone], [e1, byApprover]),
                approvers: [
                    try approver("a1", name: "Pocket", keys: a1, created: 50, endorser: "b1", by: b1, at: 60, over: ax)
                ]
            ),
            send: send("changed", devices: ["b1"]),
            signers: [signer(b2, at: 500, "unverified")]
        )
        add(
            "a vouch by an authenticator the directory does not list as an approver is refused",
            pinned: pinsB1,
            with(directory("bob", [laptop, phone], [e1, byApprover]), approvers: []),
            send: send("changed", devices: ["b1"]),
            signers: [signer(b2, at: 500, "unverified")]
        )
        add(
            "an endorsement signed more than five minutes ahead of the clock is refused",
            pinned: pinsB1,
            with(
                directory("bob", [laptop, phone], [e1, byApprover]),
                approvers: [try approver("a1", name: "Pocket", keys: a1, created: 50, endorser: "b1", by: b1, at: 1_400)]
            ),
            send: send("changed", devices: ["b1"]),
            signers: [signer(b2, at: 500, "unverified")]
        )
        add(
            "an approver listed under a messaging device's ID is ignored",
            pinned: pinned("bob", [("b1", "Laptop", b1), ("b3", "Tablet", b3)]),
            with(
                directory(
                    "bob",
                    [laptop, Listed(id: "b3", name: "Tablet", keys: b3, created: 20, keysSince: 20), phone],
                    [
                        e1, Entry(device: "b3", keys: b3, added: 20),
                        Entry(
                            device: "b2",
                            keys: b2,
                            added: 100,
                            vouch: try vouch(voucher: "b3", by: a1, device: "b2", keys: b2, at: 100)
                        ),
                    ]
                ),
                approvers: [try approver("b3", name: "Pocket", keys: a1, created: 50, endorser: "b1", by: b1, at: 60)]
            ),
            send: send("changed", devices: ["b1", "b3"]),
            signers: [signer(b2, at: 500, "unverified")]
        )
        let root: [String: Any] = [
            "comment":
                "Pins (docs/PROTOCOL.md §1.2) against what a directory says: generated by scripts/vectors/CountersignVectors/PinVectorGenerator.swift (countersign-vectors); the expectations are the rules', checked by Tests/CountersignCLITests/PinVectorTests.swift (KeyPins) and Tests/WebUnit/pins-vectors.test.mjs (pins.js). Each signer is looked up on a fresh copy of the pins before the send check, with the directory.",
            "cases": cases,
        ]
        let data = try JSONSerialization.data(withJSONObject: root, options: [.prettyPrinted, .sortedKeys])
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}

extension PinVectorGenerator.Keys {
    /// `a`'s signing key with `b`'s encryption key.
    static func mixed(_ a: Self, _ b: Self) -> Self {
        var k = a
        k.encryption = b.encryption
        return k
    }

    /// `a`'s signing key for both, as a CLI device has it.
    static func single(_ a: Self) -> Self {
        var k = a
        k.encryption = a.signing
        return k
    }
}
