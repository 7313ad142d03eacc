import CountersignCrypto
import Foundation

/// Where a device keeps its pins (`KeyPins`).
public protocol PinStore: Sendable {
    /// The pins kept; empty when nothing was pinned yet. Pins that are there but cannot be read throw.
    func loadPins() throws -> KeyPins
    /// Runs `body` on the pins as kept now and keeps what it leaves, with no other writer of this store
    /// in between (the directory store holds a file lock, across processes).
    func updatePins<T>(_ body: (inout KeyPins) throws -> T) throws -> T
}

/// A device's pins as one run of a client uses them: `KeyPins`'s rules (trust on first use, signed
/// rotations followed, anything else refused until trusted) over a snapshot loaded from a `PinStore`.
/// `save()` writes back only the users this book changed, over the pins as kept at that moment and
/// under the store's lock: two runs that pin different people (two `send`s in one config directory)
/// both keep their pins, and a user changed by both ends as the later run left it.
public struct ContactBook<Store: PinStore> {
    public let store: Store
    public private(set) var pins: KeyPins
    /// The pins as loaded (or last saved): what `save()` compares with to find what this run changed.
    private var base: KeyPins

    public init(store: Store) throws {
        self.store = store
        pins = try store.loadPins()
        base = pins
    }

    public var contacts: [String: PinnedContact] { pins.contacts }

    /// The users whose pins differ from the snapshot loaded or last saved.
    public var changedUsers: [String] {
        Set(pins.contacts.keys).union(base.contacts.keys).filter { pins.contacts[$0] != base.contacts[$0] }.sorted()
    }

    /// Pins `devices` for `user` as confirmed now (`KeyPins.pin`).
    public mutating func pin(_ user: String, _ devices: [PinnedDevice], now: Date) {
        pins.pin(user, devices, now: now)
    }

    /// The check before sealing to `directory`'s devices (`KeyPins.checkBeforeSending`): a first contact
    /// is returned, not pinned (pin it once the message is sent); signed rotations are followed.
    public mutating func checkBeforeSending(
        _ directory: UserDirectory,
        ownUsername: String,
        ownDeviceID: String?,
        ownKeyID: String?,
        now: Date
    ) throws -> KeyPins.SendCheck {
        try pins.checkBeforeSending(
            directory,
            ownUsername: ownUsername,
            ownDeviceID: ownDeviceID,
            ownKeyID: ownKeyID,
            now: now
        )
    }

    /// The pinned key a message verifies under (`KeyPins.signer`). Save only once the signature holds
    /// (a first contact is pinned here even when the key is then refused).
    public mutating func signer(
        sender: String,
        keyID: String,
        signedAt: Date,
        directory: UserDirectory?,
        ownUsername: String,
        ownDeviceID: String?,
        ownKeyID: String? = nil,
        now: Date
    ) throws -> KeyPins.Signer {
        try pins.signer(
            sender: sender,
            keyID: keyID,
            signedAt: signedAt,
            directory: directory,
            ownUsername: ownUsername,
            ownDeviceID: ownDeviceID,
            ownKeyID: ownKeyID,
            now: now
        )
    }

    /// Pins a device of the own account this device approved (`KeyPins.pinApproved`).
    @discardableResult
    public mutating func pinApproved(_ user: String, _ device: PinnedDevice, now: Date) -> Bool {
        pins.pinApproved(user, device, now: now)
    }

    /// Marks `user` verified or not (`KeyPins.setVerified`); false when nothing is pinned for them.
    @discardableResult
    public mutating func setVerified(_ user: String, _ verified: Bool, now: Date) -> Bool {
        pins.setVerified(user, verified, now: now)
    }

    /// Keeps the users this book changed, over the pins as the store holds them now (under its lock),
    /// and takes the result as the new snapshot.
    public mutating func save() throws {
        let mine = pins
        let changed = changedUsers
        let merged = try store.updatePins { kept -> KeyPins in
            for user in changed { kept.contacts[user] = mine.contacts[user] }
            return kept
        }
        pins = merged
        base = merged
    }
}
