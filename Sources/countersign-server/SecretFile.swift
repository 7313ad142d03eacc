import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A secret the operator keeps in a file (the metrics token, the APNs key), read through one descriptor: not
/// through a symbolic link, a regular file only (a FIFO would hang the start), readable by its owner alone, and
/// never more than `maximum` bytes. Each refusal names the file (`what`, `path`) and says what to do.
enum SecretFile {
    static func read(_ path: String, what: String, maximum: Int) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let link = errno == ELOOP ? " (a symbolic link is refused: name the file itself)" : ""
            throw ValidationError("cannot read \(what) \(path): \(String(cString: strerror(errno)))\(link)")
        }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw ValidationError("\(what) \(path) is not a regular file")
        }
        guard status.st_mode & 0o077 == 0 else {
            throw ValidationError("\(what) \(path) may be read by other users; chmod 600 \(path)")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= maximum {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else {
                throw ValidationError("cannot read \(what) \(path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { return bytes }
            bytes += buffer.prefix(n)
        }
        throw ValidationError("\(what) \(path) is over \(maximum) bytes")
    }
}
