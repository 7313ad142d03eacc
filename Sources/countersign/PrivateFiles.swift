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

    /// Creates `url` (and the config directory, and their missing parents) mode 0700 if missing. A failure
    /// names the directory and the system's reason (never a raw Foundation error).
    static func directory(_ url: URL) throws {
        for dir in [config, url] { try makeDirectory(dir.path) }
    }

    private static func makeDirectory(_ path: String) throws {
        if mkdir(path, 0o700) == 0 || errno == EEXIST { return }
        let why = errno
        if why == ENOENT {
            let parent = (path as NSString).deletingLastPathComponent
            if !parent.isEmpty, parent != path {
                try makeDirectory(parent)
                if mkdir(path, 0o700) == 0 || errno == EEXIST { return }
            }
        }
        throw CLIError.io(cannotCreate(path, errno: why == ENOENT ? errno : why))
    }

    static func cannotCreate(_ path: String, errno code: Int32) -> String {
        let parent = (path as NSString).deletingLastPathComponent
        let fix =
            code == EACCES || code == EROFS || code == EPERM
            ? "; make \(parent) writable for you, or set COUNTERSIGN_CONFIG_DIR to a directory of your own" : ""
        return "cannot create \(path): \(String(cString: strerror(code)))\(fix)"
    }

    /// The bytes of `url`, nil when it does not exist; a file that is there but cannot be read (or a config
    /// directory that cannot be searched) is an error naming it and why, never taken for a missing file.
    static func read(_ url: URL) throws -> Data? {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { return nil }
            let fix =
                code == EACCES || code == EPERM
                ? "; the config directory \(config.path) and its files must be yours and readable (chmod -R u+rwX \(config.path))"
                : ""
            throw CLIError.io("cannot read \(url.path): \(String(cString: strerror(code)))\(fix)")
        }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        do {
            return try handle.readToEnd() ?? Data()
        } catch {
            throw CLIError.io("cannot read \(url.path): \(String(cString: strerror(EIO)))")
        }
    }

    /// Writes `bytes` to `url` atomically, mode 0600. With `replace: false` an existing file is left
    /// alone and the write fails.
    static func write(_ bytes: [UInt8], to url: URL, replace: Bool = true) throws {
        let dir = url.deletingLastPathComponent()
        try directory(dir)
        var g = SystemRandomNumberGenerator()
        let tmp = dir.appendingPathComponent(
            ".\(url.lastPathComponent).\(getpid()).\(String(UInt64.random(in: .min ... .max, using: &g), radix: 36))"
        )
        let fd = open(tmp.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CLIError.io("cannot write \(url.path): \(String(cString: strerror(errno)))") }
        var ok = true
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                ok = false
                break
            }
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
        if dfd >= 0 {
            fsync(dfd)
            close(dfd)
        }
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
        guard let data = try read(url) else { return nil }
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
