import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// An output file that appears only when complete. Bytes go to an unnamed file in OUT's directory
/// (O_TMPFILE), which is fsynced and linked as OUT by `commit()`: a crash, a signal or a failed check
/// leaves nothing behind, and without `--force` the link fails rather than replace a file that appeared
/// meanwhile. Where O_TMPFILE is unsupported it falls back to a named `OUT.countersign-XXXXXX`.
final class AtomicOutput {
    let path: String
    let sink: FileDescriptorSink
    private let force: Bool
    private let namedTemporary: String?
    private var done = false

    init(path: String, force: Bool, mode: mode_t = 0o600) throws {
        var st = stat()
        if lstat(path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFREG else {
                throw CLIError.usage(
                    "\(path) exists and is not a regular file; to write to a device or pipe, leave out -o and redirect standard output"
                )
            }
            guard force else { throw CLIError.usage("\(path) already exists; remove it or pass --force to replace it") }
        }
        let dir = (path as NSString).deletingLastPathComponent
        let directory = dir.isEmpty ? "." : dir
        var fd: Int32 = -1
        if access("/proc/self/fd", F_OK) == 0 {
            // The mode passes through the umask, as for any new file.
            fd = open(directory, __O_TMPFILE | O_DIRECTORY | O_WRONLY | O_CLOEXEC, mode)
        }
        if fd >= 0 {
            namedTemporary = nil
        } else {
            var template = Array((path + ".countersign-XXXXXX").utf8CString)
            fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            guard fd >= 0 else {
                throw CLIError.io("cannot create a file beside \(path): \(String(cString: strerror(errno)))")
            }
            let mask = umask(0)
            umask(mask)
            fchmod(fd, mode & ~mask)
            namedTemporary = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        self.path = path
        self.force = force
        sink = FileDescriptorSink(fd: fd)
    }

    func commit() throws {
        defer { discard() }
        guard fsync(sink.fd) == 0 else {
            throw CLIError.io("cannot finish writing \(path): \(String(cString: strerror(errno)))")
        }
        let source = namedTemporary ?? "/proc/self/fd/\(sink.fd)"
        let flags = namedTemporary == nil ? AT_SYMLINK_FOLLOW : 0
        if !force {
            guard linkat(AT_FDCWD, source, AT_FDCWD, path, flags) == 0 else {
                if errno == EEXIST {
                    throw CLIError.io("\(path) appeared while writing; nothing was replaced (use --force)")
                }
                throw CLIError.io("cannot create \(path): \(String(cString: strerror(errno)))")
            }
            return
        }
        if let namedTemporary {
            guard rename(namedTemporary, path) == 0 else {
                throw CLIError.io("cannot replace \(path): \(String(cString: strerror(errno)))")
            }
            self.done = true
            close(sink.fd)
            return
        }
        // Replace atomically: link under a fresh name, then rename over OUT.
        var g = SystemRandomNumberGenerator()
        let staging = path + ".countersign-" + String(UInt64.random(in: .min ... .max, using: &g), radix: 36)
        guard linkat(AT_FDCWD, source, AT_FDCWD, staging, flags) == 0 else {
            throw CLIError.io("cannot create a file beside \(path): \(String(cString: strerror(errno)))")
        }
        guard rename(staging, path) == 0 else {
            unlink(staging)
            throw CLIError.io("cannot replace \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Drops the output; safe to call more than once.
    func discard() {
        guard !done else { return }
        done = true
        close(sink.fd)
        if let namedTemporary { unlink(namedTemporary) }
    }

    deinit { discard() }
}
