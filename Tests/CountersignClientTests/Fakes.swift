import CountersignClient
import CountersignCrypto
import Foundation

/// Pins kept in memory, as an app might keep them; `updatePins` runs one update at a time.
final class MemoryPinStore: PinStore, @unchecked Sendable {
    private let lock = NSLock()
    private var pins = KeyPins()
    var writes = 0

    func loadPins() throws -> KeyPins { lock.withLock { pins } }

    func updatePins<T>(_ body: (inout KeyPins) throws -> T) throws -> T {
        try lock.withLock {
            var copy = pins
            let result = try body(&copy)
            pins = copy
            writes += 1
            return result
        }
    }
}

/// Directories and devices for the tests.
enum Fixture {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func id(_ key: PublicKey) -> String { Hex.encode(key.fingerprint.bytes) }

    /// A fresh directory under the temporary directory.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cs-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A directory for `user` with one device `deviceID` whose keys went through `keys` (each rotation
    /// signed by the key before it, unless `forger` signs step `forged`).
    static func directory(
        _ user: String,
        deviceID: String,
        keys: [Identity],
        at times: [Date],
        forged: Int? = nil,
        forger: Identity? = nil
    ) -> UserDirectory {
        var history: [KeyHistoryEntry] = []
        for (i, key) in keys.enumerated() {
            var signature: Base64URL?
            if i > 0 {
                let signer = i == forged ? forger! : keys[i - 1]
                let message = DeviceProof.rotationMessage(
                    deviceID: deviceID,
                    oldSigningKey: keys[i - 1].publicKey,
                    newSigningKey: key.publicKey,
                    newEncryptionKey: key.publicKey
                )
                signature = Base64URL(try! signer.signature(for: message))
            }
            history.append(
                KeyHistoryEntry(
                    deviceId: deviceID,
                    signingKeyId: id(key.publicKey),
                    encryptionKeyId: id(key.publicKey),
                    signingKey: Base64URL(key.publicKey.spkiDER),
                    addedAt: times[i],
                    retiredAt: i + 1 < keys.count ? times[i + 1] : nil,
                    retiredBecause: i + 1 < keys.count ? "rotated" : nil,
                    encryptionKey: Base64URL(key.publicKey.spkiDER),
                    rotationSignature: signature
                )
            )
        }
        let last = keys[keys.count - 1].publicKey
        let current = DirectoryDevice(
            id: deviceID,
            name: "laptop",
            signingKey: Base64URL(last.spkiDER),
            signingKeyId: id(last),
            encryptionKey: Base64URL(last.spkiDER),
            encryptionKeyId: id(last),
            createdAt: times[0],
            keysSince: times[times.count - 1]
        )
        return UserDirectory(username: user, devices: [current], history: history)
    }
}
