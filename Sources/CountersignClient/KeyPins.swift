import CountersignAPI
import CountersignCrypto
import Foundation

/// A device as pinned: its ID and the key IDs computed here from the keys the directory gave (never the
/// server's own key ID fields, which it could set apart from the keys).
public struct PinnedDevice: Codable, Equatable, Sendable {
    public var id: String
    public var name: String
    public var signingKeyId: String
    public var encryptionKeyId: String
    /// The signing key itself (SPKI), so that messages verify without asking the server. Absent in pins
    /// written before it was kept; filled in from the directory when its fingerprint matches.
    public var signingKey: Base64URL?

    public init(id: String, name: String, signingKeyId: String, encryptionKeyId: String, signingKey: Base64URL?) {
        self.id = id
        self.name = name
        self.signingKeyId = signingKeyId
        self.encryptionKeyId = encryptionKeyId
        self.signingKey = signingKey
    }

    /// What must not change unnoticed: the device and both keys.
    public var identity: String { "\(id) \(signingKeyId) \(encryptionKeyId)" }
}

/// A signing key pinned earlier and since replaced: by a rotation the pinned key signed (followed without
/// asking), or when the user trusted a new device set. Messages it signed before `retiredAt` still verify.
public struct RetiredPin: Codable, Equatable, Sendable {
    public var deviceId: String
    public var signingKeyId: String
    public var signingKey: Base64URL?
    /// The earliest moment the key is known to be retired: the directory's time or when this device
    /// first saw it retired, whichever is earlier (a server cannot stretch a key's life past what we saw).
    public var retiredAt: Date
    public init(deviceId: String, signingKeyId: String, signingKey: Base64URL?, retiredAt: Date) {
        self.deviceId = deviceId
        self.signingKeyId = signingKeyId
        self.signingKey = signingKey
        self.retiredAt = retiredAt
    }
}

/// One user's pinned devices (trust on first use), as first seen or last confirmed with `trust`.
public struct PinnedContact: Codable, Equatable, Sendable {
    public var username: String
    public var firstSeen: Date
    public var trustedAt: Date
    public var devices: [PinnedDevice]
    /// Keys pinned before and replaced since (absent in files written before it was kept).
    public var retired: [RetiredPin]?
    /// When the pinned devices last changed without the user (a rotation, a link or a removal followed): the
    /// safety number changed then, and a client says so.
    public var changedAt: Date?
    /// When the user marked the contact verified after comparing the safety number (Signal's "Mark as
    /// verified"): from then on every change of their devices, signed or vouched or not, waits for `trust`.
    public var verifiedAt: Date?
}

/// How a user's devices differ from the ones pinned.
public enum DeviceChange: Equatable, Sendable {
    case added(PinnedDevice)
    case removed(PinnedDevice)
    case changed(from: PinnedDevice, to: PinnedDevice)
}

/// Why a pin check refused. Every case names the fingerprints involved so that a person can act.
public enum PinError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The directory lists a key that is not a P-256 SPKI.
    case notP256(username: String, deviceID: String)
    /// The directory lists this very device with a key it does not hold.
    case ownKeyReplaced(deviceID: String, listed: String, held: String)
    /// A pinned user's devices changed (other than by a rotation their pinned key signed).
    case changed(username: String, own: Bool, pinnedAt: Date, changes: [DeviceChange])
    /// A message's signing key is not one pinned for the sender, now or before.
    case unpinnedSigner(username: String, keyID: String, pinned: [String])
    /// A message is signed by a pinned key that was retired before the message's signed time.
    case signerRetired(username: String, keyID: String, retiredAt: Date, signedAt: Date)
    /// Nothing is pinned for the sender and the directory could not be asked.
    case notPinned(username: String)
    /// A message is signed by the current key of a device the directory lists for the sender that is not
    /// pinned (added without a vouch the pins can check): its signature may be checked with that key and
    /// the message shown as from the sender's new, unverified device, never as from the sender.
    case unverifiedDevice(username: String, device: PinnedDevice)
    /// The directory lists a device whose encryption key its signing key never chose (no valid key proof,
    /// docs/PROTOCOL.md §1.3): the server, or whoever controls it, may have put its own encryption key there.
    case unprovenKeys(username: String, deviceID: String, signingKeyID: String)

    public var description: String {
        switch self {
        case .notP256(let user, let device):
            return "the server lists a device \(device) of \(user) whose key is not a P-256 public key"
        case .ownKeyReplaced(let device, let listed, let held):
            return
                "REFUSED: the server lists this device (\(device)) with key \(KeyPins.fingerprint(hex: listed)), but its key is "
                + "\(KeyPins.fingerprint(hex: held)); someone may have replaced this device's key on the server"
        case .changed(let user, let own, _, let changes):
            return
                "\(own ? "your own account \(user)'s other devices" : "\(user)'s devices") changed since you pinned them (\(changes.count) change\(changes.count == 1 ? "" : "s"))"
        case .unpinnedSigner(let user, let key, let pinned):
            return
                "it claims to be from \(user), but it is signed by key \(KeyPins.fingerprint(hex: key)), which is not a key you pinned for \(user) "
                + "(pinned: \(pinned.isEmpty ? "none" : pinned.map(KeyPins.fingerprint(hex:)).joined(separator: ", ")))"
        case .signerRetired(let user, let key, let retired, let signed):
            return "it is signed by \(user)'s key \(KeyPins.fingerprint(hex: key)), which was retired at "
                + "\(WireDate.format(retired)), before the message's signed time \(WireDate.format(signed))"
        case .notPinned(let user):
            return "nothing is pinned for \(user) on this device and the server could not be asked"
        case .unprovenKeys(let user, let device, let key):
            return
                "REFUSED: the server lists \(user)'s device \(device) (key \(KeyPins.fingerprint(hex: key))) with an "
                + "encryption key that device's signing key never signed; the server may be substituting keys. Nothing "
                + "is sealed to \(user) until it is fixed: a device registered before key proofs were kept gives its "
                + "proof the next time it is opened (or when it changes its key)"
        case .unverifiedDevice(let user, let device):
            return "it is from \(user)'s new, unverified device \(device.id) (\"\(device.name)\") with key "
                + "\(KeyPins.fingerprint(hex: device.signingKeyId)), which no device you pinned for \(user) approved"
        }
    }
}

/// Trust on first use for a device: the device sets of the people it has written to or read from, and of
/// its own account's other devices. A value with no I/O; a client keeps it where it likes (the CLI in
/// `contacts.json`). Rules:
/// - The first contact with a user pins their active devices as the directory lists them.
/// - Later, a device whose pinned key was replaced by a rotation that key signed (docs/PROTOCOL.md §1) is
///   followed: the old key moves to `retired` with the time it was retired, and the new key is pinned.
/// - Any other change (a device added, revoked, or re-keyed without a valid rotation) is refused until
///   the user confirms it (`trust`).
/// - A message verifies only under a key pinned for its sender: a current one, or a retired one for a
///   message signed before it was retired.
public struct KeyPins: Codable, Sendable {
    public var contacts: [String: PinnedContact] = [:]

    public init() {}

    /// The longest key history a rotation is followed through.
    static let maxHistory = 1_000
    /// The longest device or account ID a statement is built over (the server's are UUIDs).
    public static let maxIDBytes = 256

    /// The fingerprint display form of a hex key ID.
    public static func fingerprint(hex: String) -> String {
        guard let bytes = Hex.decode(hex), bytes.count == 16 else { return hex }
        return Fingerprint(bytes: bytes).description
    }

    /// The hex key ID of SPKI DER bytes; nil when they are not a P-256 key.
    public static func keyID(spki: [UInt8]) -> String? {
        (try? PublicKey(spki: spki)).map { Hex.encode($0.fingerprint.bytes) }
    }

    /// The devices of `directory` to pin: every active one, but this device itself for its own account
    /// (its key is the caller's, checked against `ownKeyID` when given).
    public static func devices(
        of directory: UserDirectory,
        ownUsername: String,
        ownDeviceID: String?,
        ownKeyID: String?
    ) throws -> [PinnedDevice] {
        let user = directory.username
        let ownUsername = ownUsername.lowercased()
        var out: [PinnedDevice] = []
        for d in directory.devices {
            guard let signing = keyID(spki: d.signingKey.bytes), let encryption = keyID(spki: d.encryptionKey.bytes)
            else {
                throw PinError.notP256(username: user, deviceID: d.id)
            }
            if user == ownUsername, d.id == ownDeviceID {
                if let ownKeyID, signing != ownKeyID || encryption != ownKeyID {
                    throw PinError.ownKeyReplaced(deviceID: d.id, listed: signing, held: ownKeyID)
                }
                continue
            }
            guard keysProven(d, in: directory) else {
                throw PinError.unprovenKeys(username: user, deviceID: d.id, signingKeyID: signing)
            }
            out.append(
                PinnedDevice(
                    id: d.id,
                    name: d.name,
                    signingKeyId: signing,
                    encryptionKeyId: encryption,
                    signingKey: d.signingKey
                )
            )
        }
        return out.sorted { $0.id < $1.id }
    }

    /// Whether `device`'s signing key chose its encryption key (docs/PROTOCOL.md §1.3): the same key for
    /// both, or the history entry of its current signing key carries the key's own valid signature over its
    /// registration (challenge and account as signed) or its rotation (the key it replaced as signed), each
    /// naming this encryption key.
    public static func keysProven(_ device: DirectoryDevice, in directory: UserDirectory) -> Bool {
        guard device.id.utf8.count <= maxIDBytes, let signing = try? PublicKey(spki: device.signingKey.bytes),
            let encryption = try? PublicKey(spki: device.encryptionKey.bytes)
        else { return false }
        let entry = directory.history.first {
            $0.deviceId == device.id && $0.signingKey.bytes == signing.spkiDER
        }
        // The history names the key's encryption key too: listed otherwise (say, a browser's signing key
        // listed as its encryption key, which nobody could open), it is refused.
        if let listed = entry?.encryptionKey, (try? PublicKey(spki: listed.bytes))?.spkiDER != encryption.spkiDER {
            return false
        }
        // One key for both (a CLI device) binds itself; a proof, when listed, must still verify.
        if signing.spkiDER == encryption.spkiDER, entry?.keyProof == nil { return true }
        guard let proof = entry?.keyProof else { return false }
        let message: [UInt8]
        switch proof.statement {
        case KeyProof.registration:
            guard let challenge = proof.challenge, challenge.bytes.count == 32, let account = proof.accountId,
                account.utf8.count <= maxIDBytes
            else { return false }
            message = DeviceProof.registrationMessage(
                challenge: challenge.bytes,
                accountID: account,
                signingKey: signing,
                encryptionKey: encryption
            )
        case KeyProof.rotation:
            guard let previous = proof.previousSigningKey.flatMap({ try? PublicKey(spki: $0.bytes) }) else {
                return false
            }
            message = DeviceProof.rotationMessage(
                deviceID: device.id,
                oldSigningKey: previous,
                newSigningKey: signing,
                newEncryptionKey: encryption
            )
        default:
            return false
        }
        return signing.isValidSignature(proof.signature.bytes, for: message)
    }

    /// Throws `PinError.unprovenKeys` for the first device of `directory` whose keys are not proven.
    public static func requireKeysProven(_ directory: UserDirectory) throws {
        for device in directory.devices where !keysProven(device, in: directory) {
            throw PinError.unprovenKeys(
                username: directory.username,
                deviceID: device.id,
                signingKeyID: keyID(spki: device.signingKey.bytes) ?? "?"
            )
        }
    }

    /// What changed from `old` to `new`.
    public static func changes(from old: [PinnedDevice], to new: [PinnedDevice]) -> [DeviceChange] {
        let oldByID = Dictionary(old.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let newByID = Dictionary(new.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        var out: [DeviceChange] = []
        for d in new where oldByID[d.id] == nil { out.append(.added(d)) }
        for d in old where newByID[d.id] == nil { out.append(.removed(d)) }
        for d in new {
            if let before = oldByID[d.id], before.identity != d.identity { out.append(.changed(from: before, to: d)) }
        }
        return out
    }

    /// Pins `devices` for `user` as confirmed now; keys replaced by this move to `retired` (retired now).
    public mutating func pin(_ user: String, _ devices: [PinnedDevice], now: Date) {
        let old = contacts[user]
        var retired = old?.retired ?? []
        for d in old?.devices ?? [] where !devices.contains(where: { $0.signingKeyId == d.signingKeyId }) {
            retired.append(
                RetiredPin(deviceId: d.id, signingKeyId: d.signingKeyId, signingKey: d.signingKey, retiredAt: now)
            )
        }
        // Trusting anew is not verifying: a verified contact whose devices changed is marked again by the user.
        contacts[user] = PinnedContact(
            username: user,
            firstSeen: old?.firstSeen ?? now,
            trustedAt: now,
            devices: devices,
            retired: retired.isEmpty ? nil : retired,
            changedAt: old == nil ? nil : (old?.devices == devices ? old?.changedAt : now),
            verifiedAt: old?.devices == devices ? old?.verifiedAt : nil
        )
    }

    /// This device approved `device` of its own account `user` after the person compared its link code: the
    /// pins take it at once, so nothing this device does later (a rotation of its own key) makes it ask about
    /// a device it approved itself. Nothing happens while nothing is pinned for `user`, or when it is pinned.
    @discardableResult
    public mutating func pinApproved(_ user: String, _ device: PinnedDevice, now: Date) -> Bool {
        guard var contact = contacts[user], !contact.devices.contains(where: { $0.id == device.id }) else {
            return false
        }
        contact.devices = (contact.devices + [device]).sorted { $0.id < $1.id }
        contact.changedAt = now
        contacts[user] = contact
        return true
    }

    /// Marks `user` verified (`verified`) or not: the user compared the safety number of the devices pinned
    /// now. False when nothing is pinned for `user`.
    @discardableResult
    public mutating func setVerified(_ user: String, _ verified: Bool, now: Date) -> Bool {
        guard contacts[user] != nil else { return false }
        contacts[user]?.verifiedAt = verified ? now : nil
        return true
    }

    /// A rotation followed: the device, its old and its new signing key ID.
    public struct FollowedRotation: Equatable, Sendable {
        public var deviceID: String
        public var from: String
        public var to: String
        public init(deviceID: String, from: String, to: String) {
            self.deviceID = deviceID
            self.from = from
            self.to = to
        }
    }

    /// Follows every rotation of a pinned device that the pinned key signed (a chain of them, each signed
    /// by the key before), and fills in signing keys missing from older pins when the directory's key has
    /// the pinned fingerprint. Changes nothing else.
    @discardableResult
    public mutating func followRotations(_ directory: UserDirectory, now: Date) -> [FollowedRotation] {
        // A verified contact's every change waits for the user: nothing is followed.
        guard var contact = contacts[directory.username], contact.verifiedAt == nil else { return [] }
        var followed: [FollowedRotation] = []
        for (i, pinned) in contact.devices.enumerated() {
            if contact.devices[i].signingKey == nil,
                let entry = directory.history.first(where: {
                    $0.deviceId == pinned.id && Self.keyID(spki: $0.signingKey.bytes) == pinned.signingKeyId
                })
            {
                contact.devices[i].signingKey = entry.signingKey
            }
            guard let current = directory.devices.first(where: { $0.id == pinned.id }),
                let currentSigning = Self.keyID(spki: current.signingKey.bytes),
                let currentEncryption = Self.keyID(spki: current.encryptionKey.bytes),
                currentSigning != pinned.signingKeyId,
                let chain = Self.rotationChain(
                    deviceID: pinned.id,
                    from: contact.devices[i],
                    to: currentSigning,
                    in: directory.history,
                    now: now
                )
            else { continue }
            let last = chain.newKeys.last
            guard last?.encryption == currentEncryption else { continue }
            contact.retired = (contact.retired ?? []) + chain.retired
            contact.devices[i] = PinnedDevice(
                id: pinned.id,
                name: current.name,
                signingKeyId: currentSigning,
                encryptionKeyId: currentEncryption,
                signingKey: current.signingKey
            )
            followed.append(FollowedRotation(deviceID: pinned.id, from: pinned.signingKeyId, to: currentSigning))
        }
        if !followed.isEmpty { contact.changedAt = now }
        contacts[directory.username] = contact
        return followed
    }

    /// A device followed because a pinned device of the same account vouched for it (linked it).
    public struct FollowedLink: Equatable, Sendable {
        public var device: PinnedDevice
        /// The vouching device's ID and name as pinned.
        public var byDeviceID: String
        public var byName: String
        public init(device: PinnedDevice, byDeviceID: String, byName: String) {
            self.device = device
            self.byDeviceID = byDeviceID
            self.byName = byName
        }
    }

    /// Everything followed in one look at a directory: signed rotations, vouched new devices, and devices
    /// the directory no longer lists.
    public struct Followed: Equatable, Sendable {
        public var rotations: [FollowedRotation] = []
        public var links: [FollowedLink] = []
        public var removals: [PinnedDevice] = []
        public init(rotations: [FollowedRotation] = [], links: [FollowedLink] = [], removals: [PinnedDevice] = []) {
            self.rotations = rotations
            self.links = links
            self.removals = removals
        }
        public var isEmpty: Bool { rotations.isEmpty && links.isEmpty && removals.isEmpty }
    }

    /// Follows what a pinned contact's devices may do without the user (docs/PROTOCOL.md §1.2): rotations
    /// the pinned key signed, devices linked by a vouch from a pinned device (or, on the own account, from
    /// this device), and devices no longer listed (no longer sealed to; their keys still verify what they
    /// signed before). A verified contact follows nothing. `ownKeyID` lets this device's key vouch.
    @discardableResult
    public mutating func follow(
        _ directory: UserDirectory,
        ownUsername: String,
        ownDeviceID: String?,
        ownKeyID: String?,
        now: Date
    ) -> Followed {
        var out = Followed()
        let retiredBefore = contacts[directory.username]?.retired?.count ?? 0
        out.rotations = followRotations(directory, now: now)
        // Keys retired by the rotations just followed may still vouch for what they signed before them: an
        // honest link made before a rotation this device is only now learning of. Keys retired earlier never
        // vouch again (their holder picks the vouch's time).
        let justRetired = Array((contacts[directory.username]?.retired ?? []).dropFirst(retiredBefore))
        out.links = followLinks(
            directory,
            ownUsername: ownUsername,
            ownDeviceID: ownDeviceID,
            ownKeyID: ownKeyID,
            justRetired: justRetired,
            now: now
        )
        out.removals = followRemovals(directory, ownDeviceID: ownDeviceID, now: now)
        return out
    }

    /// Devices the directory no longer lists: moved to `retired` and no longer sealed to. Retired when the
    /// directory says, but no later than now and no earlier than a moment this device knows it was listed
    /// (its last trust or followed change): a server cannot void what the device signed before that.
    @discardableResult
    public mutating func followRemovals(
        _ directory: UserDirectory,
        ownDeviceID: String? = nil,
        now: Date
    ) -> [PinnedDevice] {
        guard var contact = contacts[directory.username], contact.verifiedAt == nil else { return [] }
        let listed = Set(directory.devices.map(\.id))
        let gone = contact.devices.filter { !listed.contains($0.id) && $0.id != ownDeviceID }
        guard !gone.isEmpty else { return [] }
        // The latest moment the devices are known to have been listed as pinned: the last trust or followed change.
        let known = max(contact.changedAt ?? contact.trustedAt, contact.trustedAt)
        for d in gone {
            let said = directory.history.first { $0.deviceId == d.id && $0.signingKeyId == d.signingKeyId }?.retiredAt
            contact.retired =
                (contact.retired ?? [])
                + [
                    RetiredPin(
                        deviceId: d.id,
                        signingKeyId: d.signingKeyId,
                        signingKey: d.signingKey,
                        retiredAt: min(max(said ?? now, known), now)
                    )
                ]
        }
        contact.devices.removeAll { d in gone.contains { $0.id == d.id } }
        contact.changedAt = now
        contacts[directory.username] = contact
        return gone
    }

    /// A vouch may be signed at most this far ahead of this device's clock.
    static let vouchSkew: TimeInterval = 300

    /// The keys trusted to vouch as `deviceID` of `contact` at `time`: its pinned key, a key of it retired by
    /// a rotation followed in this same look (`justRetired`) after `time`, and this device's own key (`own`)
    /// when the device is this one.
    static func voucherKeys(
        _ contact: PinnedContact,
        deviceID: String,
        at time: Date,
        own: (id: String, key: Base64URL)?,
        justRetired: [RetiredPin] = []
    ) -> [PublicKey] {
        var spkis: [Base64URL] = []
        if let own, own.id == deviceID { spkis.append(own.key) }
        for d in contact.devices where d.id == deviceID { if let k = d.signingKey { spkis.append(k) } }
        for r in justRetired where r.deviceId == deviceID && time < r.retiredAt {
            if let k = r.signingKey { spkis.append(k) }
        }
        return spkis.compactMap { try? PublicKey(spki: $0.bytes) }
    }

    /// The key of the approver `deviceID` the directory lists (an authenticator, docs/PROTOCOL.md §1.2), when
    /// its endorsement verifies under a key `voucherKeys` trusts for the endorsing device and is not more than
    /// `vouchSkew` ahead of `now`. Approvers are never pinned: the endorsement is checked at every look.
    static func approverKeys(
        _ contact: PinnedContact,
        _ directory: UserDirectory,
        deviceID: String,
        own: (id: String, key: Base64URL)?,
        justRetired: [RetiredPin],
        now: Date
    ) -> [PublicKey] {
        // An ID that is, or was, a messaging device's is never an approver's (one name, one key).
        guard let approver = directory.approvers?.first(where: { $0.id == deviceID }),
            !directory.devices.contains(where: { $0.id == deviceID }),
            !contact.devices.contains(where: { $0.id == deviceID }),
            !(contact.retired ?? []).contains(where: { $0.deviceId == deviceID }),
            let key = try? PublicKey(spki: approver.signingKey.bytes)
        else { return [] }
        let e = approver.endorsement
        let time = Date(timeIntervalSince1970: TimeInterval(e.endorsedAt))
        guard e.deviceId != deviceID, time <= now + Self.vouchSkew else { return [] }
        let endorsed = voucherKeys(contact, deviceID: e.deviceId, at: time, own: own, justRetired: justRetired)
            .contains { endorser in
                endorser.isValidSignature(
                    e.signature.bytes,
                    for: DeviceProof.endorsementMessage(
                        username: directory.username,
                        endorserDeviceID: e.deviceId,
                        endorserSigningKey: endorser,
                        approverDeviceID: approver.id,
                        approverSigningKey: key,
                        endorsedAt: e.endorsedAt
                    )
                )
            }
        return endorsed ? [key] : []
    }

    /// Devices the directory lists that are not pinned but were vouched for by a trusted voucher
    /// (`voucherKeys`), over the very keys the history names, with a signed rotation chain from those keys
    /// to the listed ones. Repeats until nothing more is followed, so that a device linked by a device
    /// linked in the same look is followed too.
    @discardableResult
    public mutating func followLinks(
        _ directory: UserDirectory,
        ownUsername: String,
        ownDeviceID: String?,
        ownKeyID: String?,
        justRetired: [RetiredPin] = [],
        now: Date
    ) -> [FollowedLink] {
        let user = directory.username
        guard var contact = contacts[user], contact.verifiedAt == nil else { return [] }
        guard directory.history.count <= Self.maxHistory else { return [] }
        let isOwn = user == ownUsername.lowercased()
        var own: (id: String, key: Base64URL)?
        if isOwn, let ownDeviceID, let ownKeyID,
            let d = directory.devices.first(where: { $0.id == ownDeviceID }),
            Self.keyID(spki: d.signingKey.bytes) == ownKeyID
        {
            own = (ownDeviceID, d.signingKey)
        }
        var linked: [FollowedLink] = []
        var progress = true
        while progress {
            progress = false
            // A device (or key) once pinned and since removed comes back only when the user trusts it: its
            // old vouch would otherwise let a server put a revoked device back.
            let gone = Set((contact.retired ?? []).map(\.deviceId))
            let retiredKeys = Set((contact.retired ?? []).map(\.signingKeyId))
            for d in directory.devices
            where !(isOwn && d.id == ownDeviceID) && !contact.devices.contains(where: { $0.id == d.id })
                && !gone.contains(d.id)
            {
                guard let currentSigning = Self.keyID(spki: d.signingKey.bytes),
                    let currentEncryption = Self.keyID(spki: d.encryptionKey.bytes),
                    !retiredKeys.contains(currentSigning)
                else { continue }
                for entry in directory.history where entry.deviceId == d.id {
                    guard let v = entry.vouch, v.deviceId != d.id, let enc = entry.encryptionKey,
                        let signing = try? PublicKey(spki: entry.signingKey.bytes),
                        let encryption = try? PublicKey(spki: enc.bytes),
                        !retiredKeys.contains(Hex.encode(signing.fingerprint.bytes))
                    else { continue }
                    let time = Date(timeIntervalSince1970: TimeInterval(v.vouchedAt))
                    guard time <= now + Self.vouchSkew else { continue }
                    let message = { (voucher: PublicKey) in
                        DeviceProof.vouchMessage(
                            username: user,
                            voucherDeviceID: v.deviceId,
                            voucherSigningKey: voucher,
                            deviceID: d.id,
                            signingKey: signing,
                            encryptionKey: encryption,
                            vouchedAt: v.vouchedAt
                        )
                    }
                    let vouchers =
                        Self.voucherKeys(contact, deviceID: v.deviceId, at: time, own: own, justRetired: justRetired)
                        + Self.approverKeys(
                            contact,
                            directory,
                            deviceID: v.deviceId,
                            own: own,
                            justRetired: justRetired,
                            now: now
                        )
                    guard vouchers.contains(where: { $0.isValidSignature(v.signature.bytes, for: message($0)) })
                    else { continue }
                    let start = PinnedDevice(
                        id: d.id,
                        name: d.name,
                        signingKeyId: Hex.encode(signing.fingerprint.bytes),
                        encryptionKeyId: Hex.encode(encryption.fingerprint.bytes),
                        signingKey: Base64URL(signing.spkiDER)
                    )
                    var retired: [RetiredPin] = []
                    if start.signingKeyId != currentSigning {
                        guard
                            let chain = Self.rotationChain(
                                deviceID: d.id,
                                from: start,
                                to: currentSigning,
                                in: directory.history,
                                now: now
                            ), chain.newKeys.last?.encryption == currentEncryption
                        else { continue }
                        retired = chain.retired
                    } else if start.encryptionKeyId != currentEncryption {
                        continue
                    }
                    let device = PinnedDevice(
                        id: d.id,
                        name: d.name,
                        signingKeyId: currentSigning,
                        encryptionKeyId: currentEncryption,
                        signingKey: d.signingKey
                    )
                    contact.devices.append(device)
                    if !retired.isEmpty { contact.retired = (contact.retired ?? []) + retired }
                    let byName =
                        contact.devices.first { $0.id == v.deviceId }?.name
                        ?? directory.devices.first { $0.id == v.deviceId }?.name
                        ?? directory.approvers?.first { $0.id == v.deviceId }?.name ?? v.deviceId
                    linked.append(FollowedLink(device: device, byDeviceID: v.deviceId, byName: byName))
                    progress = true
                    break
                }
            }
        }
        guard !linked.isEmpty else { return [] }
        contact.devices.sort { $0.id < $1.id }
        contact.changedAt = now
        contacts[user] = contact
        return linked
    }

    /// The rotations from `pinned`'s key to `target`, each verified with the key before it; nil when the
    /// chain breaks (a missing or bad signature, a missing key).
    static func rotationChain(
        deviceID: String,
        from pinned: PinnedDevice,
        to target: String,
        in fullHistory: [KeyHistoryEntry],
        now: Date
    )
        -> (retired: [RetiredPin], newKeys: [(signing: String, encryption: String)])?
    {
        let history = fullHistory.filter { $0.deviceId == deviceID }
        guard let spki = pinned.signingKey?.bytes, var key = try? PublicKey(spki: spki),
            Hex.encode(key.fingerprint.bytes) == pinned.signingKeyId
        else {
            return nil
        }
        // A device's history is a few entries (10 rotations a day at most); an endless one would cost a
        // signature check per entry and step.
        guard history.count <= Self.maxHistory else { return nil }
        var keyID = pinned.signingKeyId
        var retired: [RetiredPin] = []
        var newKeys: [(signing: String, encryption: String)] = []
        // A chain longer than the history is a loop; every step must move to a key not seen yet.
        var seen: Set<String> = [keyID]
        while keyID != target {
            let old = key
            let oldEntry = history.first { $0.deviceId == deviceID && $0.signingKeyId == keyID }
            let successors = history.filter { e in
                guard e.deviceId == deviceID, let sig = e.rotationSignature, let enc = e.encryptionKey,
                    let newSigning = try? PublicKey(spki: e.signingKey.bytes),
                    let newEncryption = try? PublicKey(spki: enc.bytes),
                    !seen.contains(Hex.encode(newSigning.fingerprint.bytes))
                else { return false }
                return old.isValidSignature(
                    sig.bytes,
                    for: DeviceProof.rotationMessage(
                        deviceID: deviceID,
                        oldSigningKey: old,
                        newSigningKey: newSigning,
                        newEncryptionKey: newEncryption
                    )
                )
            }
            // A key that signed two different successors was used by two parties (the owner and whoever
            // stole it): follow neither; the user decides (`trust`).
            guard successors.count == 1, let next = successors.first,
                let newKey = try? PublicKey(spki: next.signingKey.bytes),
                let encryption = next.encryptionKey.flatMap({ Self.keyID(spki: $0.bytes) })
            else { return nil }
            // Retired no later than the new key's arrival as the server tells it, and no later than now.
            let retiredAt = min(oldEntry?.retiredAt ?? now, next.addedAt, now)
            retired.append(
                RetiredPin(
                    deviceId: deviceID,
                    signingKeyId: keyID,
                    signingKey: Base64URL(old.spkiDER),
                    retiredAt: retiredAt
                )
            )
            key = newKey
            keyID = Hex.encode(newKey.fingerprint.bytes)
            seen.insert(keyID)
            newKeys.append((keyID, encryption))
        }
        return (retired, newKeys)
    }

    /// What a check before sending found.
    public enum SendCheck: Equatable, Sendable {
        /// Nothing pinned yet: these devices are to be pinned once the message is sent.
        case firstContact([PinnedDevice])
        /// As pinned, after following the rotations listed (each signed by the pinned key), and the links and
        /// removals listed.
        case pinned(followed: [FollowedRotation], linked: [FollowedLink] = [], removed: [PinnedDevice] = [])
    }

    /// The check before sealing to `directory`'s devices: follows signed rotations, and throws
    /// `PinError.changed` for any other change. The directory must be the one asked for (the SDK's
    /// `directory(username:)` checks the name).
    public mutating func checkBeforeSending(
        _ directory: UserDirectory,
        ownUsername: String,
        ownDeviceID: String?,
        ownKeyID: String?,
        now: Date
    ) throws -> SendCheck {
        let user = directory.username
        let current = try Self.devices(
            of: directory,
            ownUsername: ownUsername,
            ownDeviceID: ownDeviceID,
            ownKeyID: ownKeyID
        )
        guard let pinned = contacts[user] else { return .firstContact(current) }
        let followed = follow(
            directory,
            ownUsername: ownUsername,
            ownDeviceID: ownDeviceID,
            ownKeyID: ownKeyID,
            now: now
        )
        let changes = Self.changes(from: contacts[user]?.devices ?? pinned.devices, to: current)
        guard changes.isEmpty else {
            throw PinError.changed(
                username: user,
                own: user == ownUsername,
                pinnedAt: pinned.trustedAt,
                changes: changes
            )
        }
        return .pinned(followed: followed.rotations, linked: followed.links, removed: followed.removals)
    }

    /// A message's verified signer: the pinned key and its device.
    public struct Signer: Sendable {
        public var key: PublicKey
        public var deviceID: String
        /// When the key was retired, if it was (the message was signed before).
        public var retiredAt: Date?
        /// The first contact with the sender happened now: their devices were pinned.
        public var firstContact: [PinnedDevice]?
        /// Rotations of the sender's devices followed now (each signed by the pinned key).
        public var followed: [FollowedRotation] = []
        /// Devices of the sender linked (vouched for) or removed, followed now.
        public var linked: [FollowedLink] = []
        public var removed: [PinnedDevice] = []
        public init(
            key: PublicKey,
            deviceID: String,
            retiredAt: Date? = nil,
            firstContact: [PinnedDevice]? = nil,
            followed: [FollowedRotation] = [],
            linked: [FollowedLink] = [],
            removed: [PinnedDevice] = []
        ) {
            self.key = key
            self.deviceID = deviceID
            self.retiredAt = retiredAt
            self.firstContact = firstContact
            self.followed = followed
            self.linked = linked
            self.removed = removed
        }
    }

    /// The key a message claiming to be from `sender`, signed by `keyID` at its signed time `signedAt`,
    /// verifies under: one pinned for `sender`, current or retired after `signedAt`. With a directory
    /// (fetched for `sender` by the caller) a first contact is pinned and signed rotations are followed;
    /// without one (offline) only what is pinned counts. A first contact is pinned in `self` even when the
    /// key is refused: a caller that keeps pins should save them only once the signature verifies.
    public mutating func signer(
        sender: String,
        keyID: String,
        signedAt: Date,
        directory: UserDirectory?,
        ownUsername: String,
        ownDeviceID: String?,
        ownKeyID: String? = nil,
        now: Date
    ) throws -> Signer {
        var firstContact: [PinnedDevice]?
        var followed = Followed()
        if let directory {
            guard directory.username == sender else { throw PinError.notPinned(username: sender) }
            if contacts[sender] == nil {
                let devices = try Self.devices(
                    of: directory,
                    ownUsername: ownUsername,
                    ownDeviceID: ownDeviceID,
                    ownKeyID: nil
                )
                pin(sender, devices, now: now)
                firstContact = devices
            } else {
                followed = follow(
                    directory,
                    ownUsername: ownUsername,
                    ownDeviceID: ownDeviceID,
                    ownKeyID: ownKeyID,
                    now: now
                )
            }
        }
        guard let contact = contacts[sender] else { throw PinError.notPinned(username: sender) }
        if let d = contact.devices.first(where: { $0.signingKeyId == keyID }) {
            // The server may say the key was retired (a revocation we have not confirmed): a message
            // signed after that is refused; one signed before still verifies.
            let retiredAt = directory?.history.first { $0.deviceId == d.id && $0.signingKeyId == keyID }?.retiredAt
            if let retiredAt, retiredAt <= signedAt {
                throw PinError.signerRetired(username: sender, keyID: keyID, retiredAt: retiredAt, signedAt: signedAt)
            }
            return Signer(
                key: try Self.key(d.signingKey, keyID, sender),
                deviceID: d.id,
                retiredAt: retiredAt,
                firstContact: firstContact,
                followed: followed.rotations,
                linked: followed.links,
                removed: followed.removals
            )
        }
        if let r = contact.retired?.last(where: { $0.signingKeyId == keyID }) {
            guard signedAt < r.retiredAt else {
                throw PinError.signerRetired(username: sender, keyID: keyID, retiredAt: r.retiredAt, signedAt: signedAt)
            }
            return Signer(
                key: try Self.key(r.signingKey, keyID, sender),
                deviceID: r.deviceId,
                retiredAt: r.retiredAt,
                firstContact: firstContact,
                followed: followed.rotations,
                linked: followed.links,
                removed: followed.removals
            )
        }
        // A device the directory lists for the sender, current key and all, that no pinned device approved:
        // the caller may check the signature with it and say whose device it is not known to be.
        if let d = directory?.devices.first(where: { Self.keyID(spki: $0.signingKey.bytes) == keyID }),
            d.id != ownDeviceID || sender != ownUsername.lowercased(),
            let encryption = Self.keyID(spki: d.encryptionKey.bytes)
        {
            throw PinError.unverifiedDevice(
                username: sender,
                device: PinnedDevice(
                    id: d.id,
                    name: d.name,
                    signingKeyId: keyID,
                    encryptionKeyId: encryption,
                    signingKey: d.signingKey
                )
            )
        }
        throw PinError.unpinnedSigner(username: sender, keyID: keyID, pinned: contact.devices.map(\.signingKeyId))
    }

    /// The public key of a pin, checked against its fingerprint.
    private static func key(_ spki: Base64URL?, _ keyID: String, _ sender: String) throws -> PublicKey {
        guard let spki, let key = try? PublicKey(spki: spki.bytes), Hex.encode(key.fingerprint.bytes) == keyID else {
            throw PinError.notPinned(username: sender)
        }
        return key
    }
}
