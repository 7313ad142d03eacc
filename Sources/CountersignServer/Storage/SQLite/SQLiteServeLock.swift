import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One serving process per SQLite file. A second `serve` on the same file would start a second writer
/// and push hub that know nothing of the first: its connections would wait on the other's commits and
/// never hear of sends accepted there. An exclusive `flock` on the database file, held for the life of
/// the process, refuses it with a clear message. (`flock` locks are apart from the `fcntl` locks SQLite
/// takes on the same file, so the two do not interfere; the admin tools, which take no such lock, can
/// still open the file while it is served.)
final class SQLiteServeLock: Sendable {
    private let fd: Int32
    /// This process made the file (it may delete it again if the server fails before it listens).
    let created: Bool

    /// Creates the file if needed (private: it will hold password hashes), and takes the lock or throws.
    /// A failure deletes nothing: the file may be another server's, made a moment ago.
    init(path: String) throws {
        var created = true
        var fd = Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd < 0, errno == EEXIST {
            created = false
            fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
        }
        guard fd >= 0 else { throw ConfigurationError("cannot open \(path): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let busy = errno == EWOULDBLOCK
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw ConfigurationError(
                busy
                    ? "another countersign server is already serving \(path); stop it first, or give this one another --database"
                    : "cannot lock \(path): \(reason)"
            )
        }
        self.fd = fd
        self.created = created
    }

    deinit { Glibc.close(fd) }  // closing the descriptor releases the lock
}
