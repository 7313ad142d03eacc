import CountersignAPI
import CountersignClient
import Foundation

/// The config directory (`SessionFile.directory`) as the SDK's `ConfigDirectory` keeps it: this device,
/// its device session, its keyring, pinned contacts and stored envelopes, each file written atomically,
/// mode 0600 in 0700 directories. The account session and the authenticator's files live here too.
enum PrivateFiles {
    static var store: ConfigDirectory { ConfigDirectory(config) }
    static var config: URL { SessionFile.directory }
    static var deviceURL: URL { store.deviceURL }
    static var deviceSessionURL: URL { store.deviceSessionURL }
    static var contactsURL: URL { store.contactsURL }
    static var keysDirectory: URL { store.keysDirectory }
    static var messagesDirectory: URL { store.messagesDirectory }

    /// Creates `url` (and the config directory, and their missing parents) mode 0700 if missing.
    static func directory(_ url: URL) throws { try store.makeDirectory(url) }

    static func cannotCreate(_ path: String, errno code: Int32) -> String {
        LocalStoreError.cannotCreate(path, errno: code)
    }

    /// The bytes of `url`, nil when it does not exist; a file that is there but cannot be read is an error.
    static func read(_ url: URL) throws -> Data? { try store.read(url) }

    /// Writes `bytes` to `url` atomically, mode 0600 (with `replace: false`, never over an existing file).
    static func write(_ bytes: [UInt8], to url: URL, replace: Bool = true) throws {
        try store.write(bytes, to: url, replace: replace)
    }

    static func encoder() -> JSONEncoder { ConfigDirectory.encoder() }

    static func writeJSON<T: Encodable>(_ value: T, to url: URL) throws { try store.writeJSON(value, to: url) }

    /// Nil when the file does not exist; a file that is there but unreadable is an error naming it.
    static func readJSON<T: Decodable>(_ type: T.Type, at url: URL) throws -> T? {
        try store.readJSON(type, at: url)
    }

    static func remove(_ url: URL) { store.remove(url) }

    /// ISO 8601 in UTC, to the second, for tables and JSON output.
    static func date(_ d: Date) -> String { d.formatted(.iso8601) }
}
