import CountersignCrypto
import Foundation

/// Where a device keeps its private key files, each named by its key ID (hex).
public protocol KeyringStore: Sendable {
    /// The location of the key file for `keyID` (hex) when one is kept, nil otherwise.
    func keyFilePath(keyID: String) -> String?
    /// Keeps `pem` as the key file for `keyID`, never over an existing one; returns its path relative to
    /// the store (what `DeviceState` records).
    func storeKeyFile(_ pem: [UInt8], keyID: String) throws -> String
}

/// A device's keys: the current one and those rotated away, named by key ID so the key an envelope is
/// sealed to is found without unlocking any other.
public struct Keyring<Store: KeyringStore> {
    public let store: Store

    public init(store: Store) { self.store = store }

    /// A key's file name relative to the store: `keys/<key ID in hex>.key`.
    public static func relativePath(keyID: String) -> String { "keys/\(keyID).key" }

    /// The file of the first of `recipients` this keyring holds a key for (current or rotated away), nil
    /// when the envelope is sealed to none of them.
    public func keyFilePath(forAnyOf recipients: [Fingerprint]) -> String? {
        recipients.lazy.compactMap { store.keyFilePath(keyID: Hex.encode($0.bytes)) }.first
    }

    /// The file of the key with ID `keyID`, nil when none is kept.
    public func keyFilePath(for keyID: Fingerprint) -> String? { store.keyFilePath(keyID: Hex.encode(keyID.bytes)) }

    /// Writes a new identity's key file (encrypted with `passphrase` unless nil), never over an existing
    /// one, and returns its path relative to the store.
    public func store(_ identity: Identity, passphrase: [UInt8]?) throws -> String {
        try store.storeKeyFile(
            Array(try identity.pem(passphrase: passphrase).utf8),
            keyID: Hex.encode(identity.publicKey.fingerprint.bytes)
        )
    }
}
