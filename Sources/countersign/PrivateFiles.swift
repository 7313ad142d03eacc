import CountersignAPI
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The files of a config directory (`SessionFile.directory`) that are not the account session: this
/// device, its device session, its keyring, pinned contacts and stored envelopes. Every file is written
/// whole to a private temporary file beside it and renamed into place, mode 0600 in 0700 directories,
/// so a reader (or a crash) never sees half a file.
enum PrivateFiles {
    static var config: URL { SessionFile.directory }
    static var deviceURL: URL { config.appendingPathComponent("device.json") }
    static var deviceSessionURL: URL { config.appendingPathComponent("device-session.json") }
    static var contactsURL: URL { config.appendingPathComponent("contacts.json") }
    static var keysDirectory: URL { config.appendingPathComponent("keys") }
    static var messagesDirectory: URL { config.appendingPathComponent("messages") }

    /// Creates `url` (and the config directory) mode 0700 if missing.
    static func directory(_ url: URL) throws {
        for dir in [config, url] {
            if mkdir(dir.path, 0o700) != 0, errno != EEXIST {
                if errno == ENOENT {
                    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                } else {
                    throw CLIError.io("cannot create \(dir.path): \(String(cString: strerror(errno)))")
                }
            }
        }
    }

    /// Writes `bytes` to `url` atomically, mode 0600. With `replace: false` an existing file is left
    /// alone and the write fails.
    static func write(_ bytes: [UInt8], to url: URL, replace: Bool = true) throws {
        let dir = url.deletingLastPathComponent()
        try directory(dir)
        var g = SystemRandomNumberGenerator()
        let tmp = dir.appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(String(UInt64.random(in: .min ... .max, using: &g), radix: 36))")
        let fd = open(tmp.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CLIError.io("cannot write \(url.path): \(String(cString: strerror(errno)))") }
        var ok = true
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { ok = false; break }
            offset += n
        }
        let why = String(cString: strerror(errno))
        ok = ok && fsync(fd) == 0
        close(fd)
        guard ok else {
            unlink(tmp.path)
            throw CLIError.io("cannot write \(url.path): \(why)")
        }
        if replace {
            guard rename(tmp.path, url.path) == 0 else {
                let why = String(cString: strerror(errno))
                unlink(tmp.path)
                throw CLIError.io("cannot write \(url.path): \(why)")
            }
        } else {
            defer { unlink(tmp.path) }
            guard link(tmp.path, url.path) == 0 else {
                throw CLIError.io("cannot create \(url.path): \(String(cString: strerror(errno)))")
            }
        }
        // The rename itself is durable once the directory is synced.
        let dfd = open(dir.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 { fsync(dfd); close(dfd) }
    }

    static func encoder() -> JSONEncoder {
        let e = APICoding.encoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys]
        return e
    }

    static func writeJSON<T: Encodable>(_ value: T, to url: URL) throws {
        try write(Array(try encoder().encode(value)), to: url)
    }

    /// Nil when the file does not exist; a file that is there but unreadable is an error naming it.
    static func readJSON<T: Decodable>(_ type: T.Type, at url: URL) throws -> T? {
        guard let data = FileManager.default.contents(atPath: url.path) else {
            if FileManager.default.fileExists(atPath: url.path) { throw CLIError.io("cannot read \(url.path)") }
            return nil
        }
        do {
            return try APICoding.decoder().decode(T.self, from: data)
        } catch {
            throw CLIError.io("\(url.path) is damaged (\(error)); move it away to start over")
        }
    }

    static func remove(_ url: URL) { unlink(url.path) }

    /// ISO 8601 in UTC, to the second, for tables and JSON output.
    static func date(_ d: Date) -> String { d.formatted(.iso8601) }
}
