import CountersignAPI
import CountersignCrypto
import Foundation

/// Where a device keeps the messages it fetched.
public protocol MailboxStore: Sendable {
    /// The message stored under `id` (an `StoredMessage.isID`), nil when there is none; one that is there
    /// but cannot be read throws.
    func message(id: String) throws -> StoredMessage?
    /// Stores `message` whole, replacing any earlier copy; only once this returns may it be acknowledged.
    func save(_ message: StoredMessage) throws
    /// The IDs of the messages stored, sorted; none when nothing was stored yet.
    func messageIDs() -> [String]
}

/// A device's mailbox: what the relay queued for it, checked and stored sealed before it is acknowledged.
/// Rules:
/// - An entry is acknowledged only after it is stored (a store that fails acknowledges nothing of its
///   page, so the relay delivers it again).
/// - Delivery is at least once: a message already stored (its acknowledgement was lost) is acknowledged
///   again and not stored twice; a sent message recorded without its envelope gets it, keeping its read
///   flag.
/// - An entry that can never be opened (an invalid ID, direction or name, not an envelope, or an envelope
///   carrying another message ID) is dropped: reported, acknowledged, not stored.
public struct Mailbox<Store: MailboxStore> {
    public let store: Store

    public init(store: Store) { self.store = store }

    /// Why a queue entry was dropped.
    public enum Drop: Error, Equatable, Sendable, CustomStringConvertible {
        /// The ID is not 32 hex digits or the direction is neither incoming nor outgoing.
        case invalidIDOrDirection(seq: Int64)
        /// A sender, recipient or sending device name breaks the server's rules.
        case invalidName(id: String)
        /// The bytes are not an envelope (the parser's reason).
        case notAnEnvelope(id: String, reason: String)
        /// The envelope carries another message ID than the entry.
        case otherMessageID(id: String)

        public var description: String {
            switch self {
            case .invalidIDOrDirection(let seq):
                return "dropped queue entry \(seq): the server sent an invalid message ID or direction"
            case .invalidName(let id):
                return "dropped message \(id): the server sent a sender or recipient name that is not a username"
            case .notAnEnvelope(let id, let reason):
                return "dropped message \(id): not a valid envelope (\(reason))"
            case .otherMessageID(let id):
                return "dropped message \(id): its envelope carries another message ID"
            }
        }
    }

    /// What happened to one entry.
    public enum Received: Equatable, Sendable {
        /// Stored for the first time.
        case stored(StoredMessage)
        /// A sent message recorded earlier without its envelope now has it.
        case filled(StoredMessage)
        /// Already stored with its envelope: nothing changed.
        case duplicate
        /// Never openable: not stored.
        case dropped(Drop)
    }

    /// Something a person should hear about while entries are received.
    public enum Event: Sendable {
        case dropped(Drop)
        /// The stored copy of `id` could not be read (`error`): the relay's fresh copy replaces it.
        case replacingDamaged(id: String, error: any Error)
    }

    /// Checks and stores one entry (not acknowledged here: acknowledge it once this returns).
    public func receive(_ m: QueuedMessage, report: (Event) -> Void = { _ in }) throws -> Received {
        let message: StoredMessage
        switch Self.verifiedHeader(m) {
        case .success(let checked): message = checked
        case .failure(let drop):
            report(.dropped(drop))
            return .dropped(drop)
        }
        let existing: StoredMessage?
        do {
            existing = try store.message(id: m.id)
        } catch {
            report(.replacingDamaged(id: m.id, error: error))
            existing = nil
        }
        guard let existing else {
            try store.save(message)
            return .stored(message)
        }
        guard existing.envelope == nil else { return .duplicate }
        var filled = message
        filled.read = existing.read
        try store.save(filled)
        return .filled(filled)
    }

    /// Fetches every due entry page by page, stores each, and only then acknowledges the page's entries.
    /// Returns the IDs newly stored. `fetch(after)` returns the page after a cursor.
    public func sync(
        fetch: (Int64) async throws -> MessagePage,
        acknowledge: ([Int64]) async throws -> Void,
        report: (Event) -> Void = { _ in }
    ) async throws -> [String] {
        var fresh: [String] = []
        var cursor: Int64 = 0
        while true {
            let page = try await fetch(cursor)
            var stored: [Int64] = []
            for m in page.messages {
                cursor = max(cursor, m.seq)
                if case .stored = try receive(m, report: report) { fresh.append(m.id) }
                stored.append(m.seq)
            }
            if !stored.isEmpty { try await acknowledge(stored) }
            guard let next = page.next, !page.messages.isEmpty else { break }
            cursor = max(cursor, next)
        }
        return fresh
    }

    /// The entry as it is to be stored, or why it can never be opened.
    public static func verifiedHeader(_ m: QueuedMessage) -> Result<StoredMessage, Drop> {
        guard StoredMessage.isID(m.id), ["incoming", "outgoing"].contains(m.direction) else {
            return .failure(.invalidIDOrDirection(seq: m.seq))
        }
        // Names are shown and pins are looked up by them: only what the server's username rule allows.
        guard ([m.from] + m.to).allSatisfy(isUsername),
            m.fromDevice.utf8.count <= 64,
            m.fromDevice.unicodeScalars.allSatisfy({
                $0.isASCII && ($0.properties.isAlphabetic || $0.properties.numericType != nil || $0 == "-")
            })
        else {
            return .failure(.invalidName(id: m.id))
        }
        let envelope: MessageEnvelope
        do {
            envelope = try MessageEnvelope(bytes: m.envelope.bytes)
        } catch {
            return .failure(.notAnEnvelope(id: m.id, reason: "\(error)"))
        }
        guard Hex.encode(envelope.messageID) == m.id else { return .failure(.otherMessageID(id: m.id)) }
        return .success(
            StoredMessage(
                id: m.id,
                direction: m.direction,
                from: m.from.lowercased(),
                fromDevice: m.fromDevice,
                to: m.to.map { $0.lowercased() },
                sentAt: Date(timeIntervalSince1970: Double(envelope.created) / 1000),
                acceptedAt: m.acceptedAt,
                deliverAt: m.deliverAt,
                envelope: m.envelope,
                read: false,
                readAt: nil
            )
        )
    }

    /// The server's username rule (``UsernameRule``).
    public static func isUsername(_ raw: String) -> Bool { UsernameRule.normalised(raw) != nil }
}
