import Synchronization

/// The server's one group-and-drain loop. Work that arrives while every drainer is busy waits and is
/// taken together by the next free one, so under load many callers share one commit or one statement,
/// while a lone caller is served at once with no added wait. Send batches, PostgreSQL's grouped session
/// reads and SQLite's group commit each hold one.
final class GroupedQueue<Item: Sendable>: Sendable {
    private struct State {
        var waiting: [Item] = []
        var idle: [Int]
    }
    private let state: Mutex<State>
    /// At most this many items go into one group; the rest wait for the next, so a long group does not
    /// make its first caller wait for all of them.
    let maxGroup: Int
    /// Groups taken and the items in them (tests and benchmarks).
    let groups = Atomic<Int>(0)
    let grouped = Atomic<Int>(0)

    init(drainers: Int = 1, maxGroup: Int) {
        precondition(drainers > 0 && maxGroup > 0)
        self.maxGroup = maxGroup
        state = Mutex(State(idle: Array((0..<drainers).reversed())))
    }

    /// Queues `item`. Returns the drainer that was idle and is now the caller's to start (it must drain
    /// until nothing waits), or nil when a running drainer will take the item.
    func add(_ item: Item) -> Int? {
        state.withLock { s in
            s.waiting.append(item)
            return s.idle.popLast()
        }
    }

    /// Runs `body` on group after group for `drainer` until nothing waits; the drainer is then idle.
    func drain(_ drainer: Int, _ body: ([Item]) async -> Void) async {
        while let group = next(drainer) { await body(group) }
    }

    /// `drain` for a drainer that is a serial queue's thread.
    func drainNow(_ drainer: Int, _ body: ([Item]) -> Void) {
        while let group = next(drainer) { body(group) }
    }

    /// Items queued and not yet taken into a group (tests).
    var waiting: Int { state.withLock { $0.waiting.count } }

    private func next(_ drainer: Int) -> [Item]? {
        let group = state.withLock { s -> [Item]? in
            guard !s.waiting.isEmpty else {
                s.idle.append(drainer)
                return nil
            }
            let taken = Array(s.waiting.prefix(maxGroup))
            s.waiting.removeFirst(taken.count)
            return taken
        }
        if let group {
            groups.add(1, ordering: .relaxed)
            grouped.add(group.count, ordering: .relaxed)
        }
        return group
    }
}
