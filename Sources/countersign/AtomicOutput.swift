import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An output file that appears only when complete: bytes go to `OUT.countersign-XXXXXX` beside it
/// (mode 0600), which is fsynced and renamed over `OUT` by `commit()`, or removed by `discard()`.
final class AtomicOutput {
    let path: String
    let temporaryPath: String
    let sink: FileDescriptorSink
    private var done = false

    init(path: String, force: Bool, mode: mode_t = 0o600) throws {
        var st = stat()
        if lstat(path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFREG else {
                throw CLIError.usage("\(path) exists and is not a regular file; to write to a device or pipe, leave out -o and redirect standard output")
            }
            guard force else { throw CLIError.usage("\(path) already exists; remove it or pass --force to replace it") }
        }
        var template = Array((path + ".countersign-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw CLIError.io("cannot create a file beside \(path): \(String(cString: strerror(errno)))") }
        fchmod(fd, mode)
        self.path = path
        temporaryPath = String(cString: template)
        sink = FileDescriptorSink(fd: fd)
    }

    func commit() throws {
        guard fsync(sink.fd) == 0, close(sink.fd) == 0 else {
            discard()
            throw CLIError.io("cannot finish writing \(path): \(String(cString: strerror(errno)))")
        }
        done = true
        guard rename(temporaryPath, path) == 0 else {
            unlink(temporaryPath)
            throw CLIError.io("cannot rename the output to \(path): \(String(cString: strerror(errno)))")
        }
    }

    func discard() {
        guard !done else { return }
        done = true
        close(sink.fd)
        unlink(temporaryPath)
    }

    deinit { discard() }
}
