import CountersignCrypto
import Foundation

/// The pins in `contacts.json`; an update holds the directory's lock from its read to its write.
extension ConfigDirectory: PinStore {
    public func loadPins() throws -> KeyPins { try readJSON(KeyPins.self, at: contactsURL) ?? KeyPins() }

    public func updatePins<T>(_ body: (inout KeyPins) throws -> T) throws -> T {
        try withLock {
            var pins = try loadPins()
            let result = try body(&pins)
            try writeJSON(pins, to: contactsURL)
            return result
        }
    }
}

/// Messages in `messages/<id>.json`, each written whole.
extension ConfigDirectory: MailboxStore {
    public func messageURL(id: String) -> URL { messagesDirectory.appendingPathComponent("\(id).json") }

    public func message(id: String) throws -> StoredMessage? {
        try readJSON(StoredMessage.self, at: messageURL(id: id))
    }

    public func save(_ message: StoredMessage) throws { try writeJSON(message, to: messageURL(id: message.id)) }

    public func messageIDs() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: messagesDirectory.path)) ?? []
        return names.filter { $0.hasSuffix(".json") && StoredMessage.isID(String($0.dropLast(5))) }
            .map { String($0.dropLast(5)) }.sorted()
    }
}
