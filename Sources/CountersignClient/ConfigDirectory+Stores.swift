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

/// This device in `device.json` and its session in `device-session.json`.
extension ConfigDirectory: DeviceStateStore {
    public func loadDevice() throws -> DeviceState? { try readJSON(DeviceState.self, at: deviceURL) }
    public func saveDevice(_ device: DeviceState) throws { try writeJSON(device, to: deviceURL) }
    public func removeDevice() { remove(deviceURL) }
    public func loadDeviceSession() throws -> StoredDeviceSession? {
        try readJSON(StoredDeviceSession.self, at: deviceSessionURL)
    }
    public func saveDeviceSession(_ session: StoredDeviceSession) throws {
        try writeJSON(session, to: deviceSessionURL)
    }
    public func removeDeviceSession() { remove(deviceSessionURL) }
}

/// Key files in `keys/<key ID>.key`, 0600.
extension ConfigDirectory: KeyringStore {
    public func keyFilePath(keyID: String) -> String? {
        // Only a key ID names a file here (never a path).
        guard keyID.utf8.count == 32, Hex.decode(keyID) != nil else { return nil }
        let path = keysDirectory.appendingPathComponent("\(keyID).key").path
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    public func storeKeyFile(_ pem: [UInt8], keyID: String) throws -> String {
        let relative = Keyring<ConfigDirectory>.relativePath(keyID: keyID)
        try makeDirectory(keysDirectory)
        try write(pem, to: url.appendingPathComponent(relative), replace: false)
        return relative
    }
}
