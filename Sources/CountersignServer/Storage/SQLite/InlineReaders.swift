import Synchronization

/// Read-only direct connections lent to the caller's own thread for one point read (an account by name,
/// a second-factor row): a few microseconds of SQLite, less than the two thread wake-ups of a hop to a
/// reader's queue and back, which were most of a sign-in's storage cost. WAL readers do not wait for the
/// writer; the rare lock they can meet (WAL recovery after a crash, another process holding the file
/// exclusively) fails at once here (no busy timeout), and `SQLiteStorage.quickRead` then takes the
/// queued path (`SQLiteWorker.run`), which may wait without holding a thread of the cooperative pool. So
/// does a read that finds every connection lent out. `close` does not wait for lent connections: each
/// closes when its read returns.
final class InlineReaders: Sendable {
    private struct State {
        var idle: [DirectSQLite]
        var closed = false
    }
    private let state: Mutex<State>

    init(path: String, count: Int) throws {
        var connections: [DirectSQLite] = []
        for _ in 0..<count { connections.append(try DirectSQLite(path: path, readOnly: true, busyTimeoutMs: 0)) }
        state = Mutex(State(idle: connections))
    }

    /// Runs `body` on an idle connection, on this thread; nil when none is idle (or after `close`).
    func read<T>(_ body: (DirectSQLite) throws -> T) throws -> T? {
        guard let c = state.withLock({ $0.closed ? nil : $0.idle.popLast() }) else { return nil }
        defer {
            let closed = state.withLock { s in
                if !s.closed { s.idle.append(c) }
                return s.closed
            }
            if closed { c.close() }
        }
        return try body(c)
    }

    /// Closes the idle connections now and each lent one when it comes back.
    func close() {
        let idle = state.withLock { s in
            s.closed = true
            defer { s.idle = [] }
            return s.idle
        }
        idle.forEach { $0.close() }
    }
}
