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
