import CountersignAPI
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A device's state kept in a directory (the CLI's config directory): this device (`device.json`), its
/// device session (`device-session.json`), its keyring (`keys/`), its pins (`contacts.json`) and its
/// stored envelopes (`messages/`). Every file is written whole to a private temporary file beside it and
/// renamed into place, mode 0600 in 0700 directories, so a reader (or a crash) never sees half a file.
/// Read-modify-writes of shared files (the pins) hold an exclusive `flock` on `lock`, so two processes
/// using one directory do not lose each other's changes.
public struct ConfigDirectory: Sendable {
    public let url: URL
    /// How long an update waits for another process's lock before it gives up.
    public var lockTimeout: Duration

    public init(_ url: URL, lockTimeout: Duration = .seconds(10)) {
        self.url = url
        self.lockTimeout = lockTimeout
    }

    public var deviceURL: URL { url.appendingPathComponent("device.json") }
    public var deviceSessionURL: URL { url.appendingPathComponent("device-session.json") }
    public var contactsURL: URL { url.appendingPathComponent("contacts.json") }
    public var keysDirectory: URL { url.appendingPathComponent("keys") }
    public var messagesDirectory: URL { url.appendingPathComponent("messages") }
    /// The lock file: empty, never renamed, so every process locks the same inode.
    public var lockURL: URL { url.appendingPathComponent("lock") }

    /// Creates `directory` (and this config directory, and their missing parents) mode 0700 if missing.
    /// A failure names the directory and the system's reason.
    public func makeDirectory(_ directory: URL) throws {
        for dir in [url, directory] { try Self.makeDirectory(dir.path) }
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
        throw LocalStoreError.cannotCreateDirectory(path: path, errno: why == ENOENT ? errno : why)
    }

    /// The bytes of `file`, nil when it does not exist; a file that is there but cannot be read (or a
    /// directory that cannot be searched) is an error naming it and why, never taken for a missing file.
    public func read(_ file: URL) throws -> Data? {
        let fd = open(file.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { return nil }
            throw LocalStoreError.unreadable(path: file.path, errno: code, config: url.path)
        }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        do {
            return try handle.readToEnd() ?? Data()
        } catch {
            throw LocalStoreError.unreadable(path: file.path, errno: EIO, config: url.path)
        }
    }

    /// Writes `bytes` to `file` atomically, mode 0600. With `replace: false` an existing file is left
    /// alone and the write fails.
    public func write(_ bytes: [UInt8], to file: URL, replace: Bool = true) throws {
        let dir = file.deletingLastPathComponent()
        try makeDirectory(dir)
        var g = SystemRandomNumberGenerator()
        let tmp = dir.appendingPathComponent(
            ".\(file.lastPathComponent).\(getpid()).\(String(UInt64.random(in: .min ... .max, using: &g), radix: 36))"
        )
        let fd = open(tmp.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LocalStoreError.unwritable(path: file.path, errno: errno) }
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
        let why = errno
        ok = ok && fsync(fd) == 0
        close(fd)
        guard ok else {
            unlink(tmp.path)
            throw LocalStoreError.unwritable(path: file.path, errno: why)
        }
        if replace {
            guard rename(tmp.path, file.path) == 0 else {
                let why = errno
                unlink(tmp.path)
                throw LocalStoreError.unwritable(path: file.path, errno: why)
            }
        } else {
            defer { unlink(tmp.path) }
            guard link(tmp.path, file.path) == 0 else {
                throw LocalStoreError.cannotCreate(path: file.path, errno: errno)
            }
        }
        // The rename itself is durable once the directory is synced.
        let dfd = open(dir.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            fsync(dfd)
            close(dfd)
        }
    }

    /// The JSON form of every file here: the API's dates (RFC 3339 with milliseconds, which pins' retirement
    /// times need), keys sorted, indented.
    public static func encoder() -> JSONEncoder {
        let e = APICoding.encoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys]
        return e
    }

    public func writeJSON<T: Encodable>(_ value: T, to file: URL) throws {
        try write(Array(try Self.encoder().encode(value)), to: file)
    }

    /// Nil when the file does not exist; a file that is there but unreadable or damaged is an error
    /// naming it.
    public func readJSON<T: Decodable>(_ type: T.Type, at file: URL) throws -> T? {
        guard let data = try read(file) else { return nil }
        do {
            return try APICoding.decoder().decode(T.self, from: data)
        } catch {
            throw LocalStoreError.damaged(path: file.path, reason: "\(error)")
        }
    }

    public func remove(_ file: URL) { unlink(file.path) }

    /// Runs `body` holding an exclusive `flock` on `lock`, waiting at most `lockTimeout` for another
    /// process to release it (then `LocalStoreError.busy`). The lock goes with the descriptor, so a
    /// process that dies holding it releases it. Not reentrant: `body` must not take it again.
    public func withLock<T>(_ body: () throws -> T) throws -> T {
        try makeDirectory(url)
        let path = lockURL.path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LocalStoreError.unwritable(path: path, errno: errno) }
        defer { close(fd) }
        let clock = ContinuousClock()
        let deadline = clock.now + lockTimeout
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            guard code == EWOULDBLOCK || code == EINTR else {
                throw LocalStoreError.unwritable(path: path, errno: code)
            }
            guard clock.now < deadline else {
                throw LocalStoreError.busy(lock: path, seconds: Int(lockTimeout.components.seconds))
            }
            usleep(10_000)
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }
}
