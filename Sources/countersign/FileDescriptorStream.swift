import CountersignCrypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Reads with read(2) straight into the caller's buffer: no intermediate copies or allocations.
final class FileDescriptorSource: ByteSource {
    let fd: Int32
    private let ownsDescriptor: Bool

    init(fd: Int32, owns: Bool) {
        self.fd = fd
        ownsDescriptor = owns
    }

    /// Opens `path` for reading; "-" or nil is standard input.
    convenience init(path: String?) throws {
        guard let path, path != "-" else {
            self.init(fd: 0, owns: false)
            return
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CLIError.io("cannot read \(path): \(String(cString: strerror(errno)))") }
        var st = stat()
        if fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR {
            close(fd)
            throw CLIError.io("\(path) is a directory")
        }
        self.init(fd: fd, owns: true)
    }

    deinit { if ownsDescriptor { close(fd) } }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n >= 0 { return n }
            if errno == EINTR { continue }
            throw CLIError.io("read failed: \(String(cString: strerror(errno)))")
        }
    }

    var size: Int? {
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int(st.st_size)
    }

    func rewind() throws {
        guard lseek(fd, 0, SEEK_SET) == 0 else { throw CLIError.io("cannot rewind the input") }
    }
}

final class FileDescriptorSink: ByteSink {
    let fd: Int32
    /// Bytes the kernel accepted, counted per write(2), so a failure midway can say how much went out.
    private(set) var written = 0

    init(fd: Int32) { self.fd = fd }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw CLIError.io("write failed: \(String(cString: strerror(errno)))")
            }
            offset += n
            written += n
        }
    }
}
