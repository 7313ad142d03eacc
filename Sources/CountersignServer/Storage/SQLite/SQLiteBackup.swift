import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `countersign admin backup`: a consistent copy of a SQLite database, taken while a server may be
/// serving it. `VACUUM INTO` reads the source in one read transaction (a snapshot: writes committed
/// meanwhile are not in the copy, and none is half in it) and writes a compact database with no WAL beside
/// it. The copy goes to an empty private file (0600: it holds password hashes) in the target's directory,
/// is checked (`PRAGMA integrity_check`), synced, and only then linked under the target's name, which
/// must not exist: a failure at any step leaves no file behind and replaces nothing.
enum SQLiteBackup {
    struct Summary: Sendable {
        let bytes: Int
        let accounts: Int64
        let devices: Int64
        let queuedMessages: Int64
    }

    static func copy(from source: String, to target: String) throws -> Summary {
        guard FileManager.default.fileExists(atPath: source) else {
            throw ConfigurationError("no database at \(source); nothing was written")
        }
        var st = stat()
        guard lstat(target, &st) != 0 else {
            throw ConfigurationError(
                "\(target) already exists; choose a new file name (a backup never replaces a file)"
            )
        }
        let directory =
            (target as NSString).deletingLastPathComponent.isEmpty
            ? "." : (target as NSString).deletingLastPathComponent
        // An absolute path: SQLite reads a name starting with `file:` as a URI, and would write the copy
        // to another file than the one made here.
        let absolute = target.hasPrefix("/") ? target : FileManager.default.currentDirectoryPath + "/" + target
        var template = Array((absolute + ".partial-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            throw ConfigurationError("cannot write in \(directory): \(String(cString: strerror(errno)))")
        }
        let partial = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // The temporary name goes in every case: after the link the copy lives on under the target's.
        defer {
            close(fd)
            unlink(partial)
        }
        do {
            // Read-only: the live database is never written. (Not query_only, which would refuse the copy.)
            let reader = try DirectSQLite(path: source, readOnly: true, queryOnly: false)
            defer { reader.close() }
            let vacuum = try reader.statement("VACUUM INTO ?1")
            vacuum.bind(1, partial)
            try vacuum.run()
        }
        // The copy went into the file made above (same inode) and is not empty.
        var made = stat()
        var named = stat()
        guard fstat(fd, &made) == 0, stat(partial, &named) == 0, made.st_ino == named.st_ino, made.st_size > 0 else {
            throw ConfigurationError("the copy was not written to \(partial); nothing was backed up")
        }
        let summary: Summary
        do {
            let copy = try DirectSQLite(path: partial, readOnly: true)
            defer { copy.close() }
            let check = try copy.statement("PRAGMA integrity_check")
            var verdict: [String] = []
            try check.forEach { verdict.append($0.string(0)) }
            guard verdict == ["ok"] else {
                throw ConfigurationError(
                    "the copy failed SQLite's integrity check: \(verdict.prefix(3).joined(separator: "; "))"
                )
            }
            func count(_ table: String) throws -> Int64 {
                let s = try copy.statement("SELECT count(*) FROM \(table)")
                var n: Int64 = 0
                try s.forEach { n = $0.int64(0) }
                return n
            }
            var size = stat()
            fstat(fd, &size)
            summary = Summary(
                bytes: Int(size.st_size),
                accounts: try count("accounts"),
                devices: try count("devices"),
                queuedMessages: try count("message_queue")
            )
        }
        guard fsync(fd) == 0 else {
            throw ConfigurationError("cannot sync \(partial): \(String(cString: strerror(errno)))")
        }
        // link(2), not rename(2): it fails if the target appeared meanwhile, so nothing is ever replaced.
        guard link(partial, target) == 0 else {
            throw ConfigurationError("cannot name the copy \(target): \(String(cString: strerror(errno)))")
        }
        let dirfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirfd >= 0 {
            fsync(dirfd)
            close(dirfd)
        }
        return summary
    }
}
