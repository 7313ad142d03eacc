import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with posix_spawn, for the tests that run `countersign`, Python and other tools.
/// Foundation's `Process.run()` in Swift 6.3.1 reads past a buffer while listing /proc/self/fd and crashes a
/// process with ~1,300 open descriptors (swift-corelibs-foundation pull request 5472), as parallel tests reach.
public final class Spawned: @unchecked Sendable {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable {
        /// The test process's own.
        case inherit
        case null
        /// A pipe whose other end is `input`, `output` or `errorOutput`.
        case pipe
        /// A file: read for stdin, else created or truncated.
        case file(String)
    }

    /// A system call that failed, with its errno.
    public struct Failure: Error, CustomStringConvertible {
        public let call: String
        public let code: Int32
        public var description: String { "\(call): \(String(cString: strerror(code)))" }
    }

    public let pid: pid_t
    /// The parent's ends of `.pipe` streams: stdin's to write, stdout's and stderr's to read.
    public let input: FileHandle?
    public let output: FileHandle?
    public let errorOutput: FileHandle?
    private let lock = NSLock()
    private var status: Int32?

    /// Starts `executable` (a path; no PATH lookup) with `environment` over the inherited one. The child gets
    /// its own process group (as Foundation's did), default signal handlers, no blocked signals, and no
    /// descriptor of the test process beyond its three streams.
    public init(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String] = [:],
        directory: String? = nil,
        stdin: Stream = .null,
        stdout: Stream = .inherit,
        stderr: Stream = .inherit
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var ours: [Int32?] = [nil, nil, nil]
        var theirs: [Int32] = []
        var started = false
        defer {
            theirs.forEach { close($0) }
            if !started { ours.compactMap { $0 }.forEach { close($0) } }
        }
        // GNU functions that Swift's Glibc module leaves out (it is imported without _GNU_SOURCE).
        typealias Actions = UnsafeMutablePointer<posix_spawn_file_actions_t>
        let pipe2 = Self.gnu("pipe2", as: (@convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32).self)
        let addchdir = Self.gnu(
            "posix_spawn_file_actions_addchdir_np",
            as: (@convention(c) (Actions, UnsafePointer<CChar>) -> Int32).self
        )
        let closefrom = Self.gnu(
            "posix_spawn_file_actions_addclosefrom_np",
            as: (@convention(c) (Actions, Int32) -> Int32).self
        )
        for (fd, stream) in zip(Int32(0)...2, [stdin, stdout, stderr]) {
            let flags = fd == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC
            switch stream {
            case .inherit: break
            case .null: posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", flags, 0o644)
            case .file(let path): posix_spawn_file_actions_addopen(&actions, fd, path, flags, 0o644)
            case .pipe:
                // Both ends close-on-exec: no other child inherits them; dup2 clears the flag on the child's copy.
                var ends: [Int32] = [-1, -1]
                guard pipe2(&ends, O_CLOEXEC) == 0 else { throw Failure(call: "pipe2", code: errno) }
                theirs.append(fd == 0 ? ends[0] : ends[1])
                ours[Int(fd)] = fd == 0 ? ends[1] : ends[0]
                posix_spawn_file_actions_adddup2(&actions, theirs.last!, fd)
            }
        }
        if let directory { _ = addchdir(&actions, directory) }
        _ = closefrom(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var signals = sigset_t()
        sigfillset(&signals)
        posix_spawnattr_setsigdefault(&attributes, &signals)
        sigemptyset(&signals)
        posix_spawnattr_setsigmask(&attributes, &signals)
        posix_spawnattr_setflags(
            &attributes,
            Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        )

        let environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0)=\($1)" }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard rc == 0 else { throw Failure(call: "posix_spawn \(executable)", code: rc) }
        started = true
        self.pid = pid
        let handles = ours.map { $0.map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) } }
        (input, output, errorOutput) = (handles[0], handles[1], handles[2])
    }

    /// Runs to the end, writing `stdin` (nil: /dev/null) while reading stdout and stderr, so that neither side
    /// waits on a full pipe.
    public static func run(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String] = [:],
        directory: String? = nil,
        stdin: Data? = nil
    ) throws -> (status: Int32, stdout: Data, stderr: Data) {
        // A child that exits without reading its input must not kill the test process with SIGPIPE.
        _ = Glibc.signal(SIGPIPE, SIG_IGN)
        let child = try Spawned(
            executable,
            arguments,
            environment: environment,
            directory: directory,
            stdin: stdin == nil ? .null : .pipe,
            stdout: .pipe,
            stderr: .pipe
        )
        let stdin = stdin ?? Data()
        var writer = child.input?.fileDescriptor
        var sent = 0
        if let writer { _ = fcntl(writer, F_SETFL, O_NONBLOCK) }
        var readers = [child.output!.fileDescriptor: 0, child.errorOutput!.fileDescriptor: 1]
        var collected = [Data(), Data()]
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while !readers.isEmpty || writer != nil {
            if writer != nil, sent == stdin.count {
                try? child.input?.close()  // end of input
                writer = nil
                continue
            }
            var fds = readers.keys.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            if let writer { fds.append(pollfd(fd: writer, events: Int16(POLLOUT), revents: 0)) }
            guard poll(&fds, nfds_t(fds.count), -1) >= 0 else {
                if errno == EINTR { continue }
                throw Failure(call: "poll", code: errno)
            }
            for ready in fds where ready.revents != 0 {
                if ready.fd == writer {
                    let n = stdin.withUnsafeBytes { write(ready.fd, $0.baseAddress! + sent, $0.count - sent) }
                    if n > 0 { sent += n } else if errno != EAGAIN, errno != EINTR { sent = stdin.count }  // EPIPE
                } else {
                    let n = read(ready.fd, &chunk, chunk.count)
                    if n > 0 {
                        collected[readers[ready.fd]!].append(contentsOf: chunk[..<n])
                    } else if n == 0 || (errno != EAGAIN && errno != EINTR) {
                        readers[ready.fd] = nil
                    }
                }
            }
        }
        return (child.wait(), collected[0], collected[1])
    }

    /// Whether the child has not exited yet (it is reaped once it has).
    public var isRunning: Bool { reap(WNOHANG) == nil }

    /// Waits for the child to exit: its exit status, or 128 + the signal that ended it (as a shell reports).
    @discardableResult
    public func wait() -> Int32 {
        // Wait without reaping, outside the lock, so `isRunning` on another thread does not block meanwhile.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == -1, errno == EINTR {}
        return reap(0) ?? -1
    }

    /// Sends `number` unless the child has been reaped (its pid may then be another process's).
    public func signal(_ number: Int32) {
        lock.withLock { if status == nil { _ = kill(pid, number) } }
    }

    private static func gnu<F>(_ name: String, as type: F.Type) -> F { unsafeBitCast(dlsym(nil, name)!, to: type) }

    private func reap(_ options: Int32) -> Int32? {
        lock.withLock {
            if status != nil { return status }
            var raw: Int32 = 0
            var r: pid_t
            repeat { r = waitpid(pid, &raw, options) } while r == -1 && errno == EINTR
            if r == 0 { return nil }
            // WIFEXITED and friends are macros Swift does not import: the low 7 bits are the signal, if any.
            status = r == -1 ? -1 : (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
            return status
        }
    }
}
