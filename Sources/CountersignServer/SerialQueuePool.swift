import Foundation

/// One serial queue per core, taken in turn: CPU-bound work runs there, never on an event loop or the
/// cooperative pool, where it would stall I/O and every other task. Password hashes have threads of their
/// own (`HashThreads`), so a sign-in flood does not delay message relaying.
final class SerialQueuePool: Sendable {
    /// Short checks: the signatures of sends.
    static let cpu = SerialQueuePool(label: "countersign.cpu")

    let queues: [DispatchQueue]
    private let turn = RoundRobin()

    init(label: String) {
        queues = (0..<max(1, ProcessInfo.processInfo.activeProcessorCount)).map {
            DispatchQueue(label: "\(label).\($0)")
        }
    }

    func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        let queue = turn.pick(queues)
        return try await withCheckedThrowingContinuation { c in queue.async { c.resume(with: Result { try work() }) } }
    }
}
