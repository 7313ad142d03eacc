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

/// Messages kept in memory; `failSaves` makes every save throw, as a full disk would.
final class MemoryMailboxStore: MailboxStore, @unchecked Sendable {
    struct Full: Error {}
    private let lock = NSLock()
    private var messages: [String: StoredMessage] = [:]
    var failSaves = false
    /// Every save and acknowledgement, in order: "save ID", "ack 1,2".
    var log: [String] = []

    func message(id: String) throws -> StoredMessage? { lock.withLock { messages[id] } }

    func save(_ message: StoredMessage) throws {
        try lock.withLock {
            if failSaves { throw Full() }
            messages[message.id] = message
            log.append("save \(message.id)")
        }
    }

    func messageIDs() -> [String] { lock.withLock { messages.keys.sorted() } }

    func record(_ line: String) { lock.withLock { log.append(line) } }
}

/// A relay's queue for one device: pages of `pageSize`, entries deleted once acknowledged.
final class FakeQueue: @unchecked Sendable {
    var entries: [QueuedMessage]
    let pageSize: Int
    var acknowledged: [Int64] = []

    init(_ entries: [QueuedMessage], pageSize: Int = 2) {
        self.entries = entries
        self.pageSize = pageSize
    }

    func fetch(after cursor: Int64) -> MessagePage {
        let due = entries.filter { $0.seq > cursor }.prefix(pageSize)
        let more = entries.filter { $0.seq > cursor }.count > pageSize
        return MessagePage(messages: Array(due), next: more ? due.last?.seq : nil)
    }

    func acknowledge(_ seqs: [Int64]) {
        acknowledged += seqs
        entries.removeAll { seqs.contains($0.seq) }
    }
}

extension Fixture {
    /// A queue entry carrying a real envelope from `sender` to `recipient`.
    static func queued(
        seq: Int64,
        from sender: Identity = .generate(),
        to recipient: Identity = .generate(),
        direction: String = "incoming",
        fromName: String = "bob",
        created: Date = t0
    ) throws -> QueuedMessage {
        let envelope = try MessageEnvelope.seal(
            Array("hello \(seq)".utf8),
            from: sender,
            to: [recipient.publicKey],
            created: created
        )
        return QueuedMessage(
            seq: seq,
            id: Hex.encode(envelope.messageID),
            direction: direction,
            from: fromName,
            fromDevice: "dev-1",
            to: ["alice"],
            envelope: Base64URL(envelope.bytes),
            acceptedAt: created + 1,
            deliverAt: created + 1
        )
    }
}
