import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Password hashes (~15 ms of CPU and 19 MiB each, admitted by `AccountService`'s queue bound) run on
/// threads of their own, one per core, at a lower scheduling priority than the event loops and the
/// cooperative pool: when a burst of sign-ins fills every core, the kernel runs the push channel and
/// message relaying first and the hashes take what is left.
enum HashThreads {
    /// The nice value of a hashing thread (Linux sets it per thread). Lowering needs no privilege.
    static let niceness: Int32 = 10

    static let threadCount = System.coreCount

    private static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: threadCount)
        pool.start()  // for the life of the process
        return pool
    }()

    /// The caller resumes on an event loop, not from the hash thread: the cooperative pool's threads are
    /// made by whichever thread enqueues work, and a thread made by a hash thread would inherit its nice
    /// value (and run relaying at low priority for the rest of its life).
    static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.runIfActive(eventLoop: MultiThreadedEventLoopGroup.singleton.any()) {
            lowerThisThread()
            return try work()
        }.get()
    }

    /// This thread's nice value (for the tests).
    static func currentNiceness() -> Int32 {
        #if os(Linux)
        return getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        #else
        return 0
        #endif
    }

    /// A syscall of ~1 µs beside a hash of ~15 ms: set on every run rather than tracked per thread. On
    /// Linux, PRIO_PROCESS with `who` 0 is the calling thread alone (the kernel's `current` task).
    private static func lowerThisThread() {
        #if os(Linux)
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
        #endif
    }
}
