import Synchronization

/// Takes the items of a fixed list in turn, from any thread: the spreading of work over per-core queues,
/// reader connections and their event loops.
final class RoundRobin: Sendable {
    private let next = Mutex(0)

    func pick<T>(_ items: [T]) -> T {
        items[
            next.withLock { i in
                defer { i = (i + 1) % items.count }
                return i % items.count
            }
        ]
    }
}
