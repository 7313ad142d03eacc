import Foundation
import Synchronization

/// Short CPU-bound work (signature checks) on one serial queue per core, never on an event loop or the
/// cooperative pool, where it would stall I/O and every other task. Separate from the Argon2 queues, so
/// a sign-in flood does not delay message relaying.
enum CPUWork {
    static let queues = (0..<max(1, ProcessInfo.processInfo.activeProcessorCount)).map {
        DispatchQueue(label: "countersign.cpu.\($0)")
    }
    private static let next = Mutex(0)

    static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        let queue = queues[
            next.withLock { i in
                defer { i = (i + 1) % queues.count }
                return i
            }
        ]
        return try await withCheckedThrowingContinuation { c in queue.async { c.resume(with: Result { try work() }) } }
    }
}
