import Foundation
import Synchronization

/// A `DirectSQLite` connection and the serial queue that alone uses it: callers hand it a whole unit of
/// work (a session lookup, a send batch) and are resumed once, instead of hopping per statement.
///
/// On the writer, `write` is a group commit across callers: every write submitted while one group is
/// being written goes into the next group, one `BEGIN IMMEDIATE … COMMIT` for all of them, each in a
/// savepoint of its own (its `writeTransaction`), so one failing write rolls back alone. A commit is the
/// writer's main cost (the WAL append, its locks and wal-index update): the push channel's
/// acknowledgements (one per delivered message) and the send batches share them instead of one each.
/// Nobody is resumed before the group's COMMIT has returned.
final class SQLiteWorker: Sendable {
    private let queue: DispatchQueue
    private let connection: DirectSQLite

    /// A write waiting for its group: runs its work inside the group's transaction and returns what
    /// to do once the group's fate (nil: committed) is known.
    private typealias Job = @Sendable (DirectSQLite) -> @Sendable ((any Error)?) -> Void
    private struct Pending: ~Copyable { var jobs: [Job] = []; var draining = false }
    private let pending = Mutex(Pending())
    /// At most this many writes share a commit; the rest go into the next group, so a long group does
    /// not make its first caller wait for all of them.
    static let maxGroup = 256
    /// Groups committed and writes in them (for tests and benchmarks).
    let groups = Atomic<Int>(0)
    let grouped = Atomic<Int>(0)

    init(label: String, path: String, readOnly: Bool) throws {
        queue = DispatchQueue(label: label)
        connection = try DirectSQLite(path: path, readOnly: readOnly)
    }

    func run<T: Sendable>(_ work: @escaping @Sendable (DirectSQLite) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in
            queue.async { c.resume(with: Result { try work(self.connection) }) }
        }
    }

    /// Runs `work` in the next group commit (see the type's comment). `work` takes its own
    /// `writeTransaction`, which is a savepoint inside the group; its result is handed back only once
    /// the whole group has committed, and a failed COMMIT fails every write of the group.
    func write<T: Sendable>(_ work: @escaping @Sendable (DirectSQLite) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, any Error>) in
            let job: Job = { connection in
                let result = Result { try work(connection) }
                return { groupError in
                    if let groupError { c.resume(throwing: groupError) } else { c.resume(with: result) }
                }
            }
            let start = pending.withLock { p -> Bool in
                p.jobs.append(job)
                guard !p.draining else { return false }
                p.draining = true
                return true
            }
            if start { queue.async { self.drain() } }
        }
    }

    /// On the queue: writes group after group until none is waiting.
    private func drain() {
        while true {
            let jobs = pending.withLock { p -> [Job] in
                guard !p.jobs.isEmpty else { p.draining = false; return [] }
                let taken = Array(p.jobs.prefix(Self.maxGroup))
                p.jobs.removeFirst(taken.count)
                return taken
            }
            guard !jobs.isEmpty else { return }
            commit(jobs)
            groups.add(1, ordering: .relaxed)
            grouped.add(jobs.count, ordering: .relaxed)
        }
    }

    private func commit(_ jobs: [Job]) {
        // A lone write is its own transaction (its writeTransaction begins and commits).
        guard jobs.count > 1 else { jobs[0](connection)(nil); return }
        do {
            try connection.execute("BEGIN IMMEDIATE")
        } catch {
            jobs.forEach { $0(connection)(nil) }   // each alone, as a lone write
            return
        }
        var finishes: [@Sendable ((any Error)?) -> Void] = []
        finishes.reserveCapacity(jobs.count)
        for job in jobs {
            finishes.append(job(connection))
            // Some errors (an I/O error, a full disk) roll back the whole transaction, not only the
            // savepoint: the writes before it are gone, so none of the group may report success.
            if connection.autocommit {
                let error = DirectSQLiteError(code: 4, message: "the group's transaction was rolled back by a failed write; retry")
                finishes.forEach { $0(error) }
                // The rest of the group, each alone.
                let done = finishes.count
                for job in jobs[done...] { job(connection)(nil) }
                return
            }
        }
        do {
            try connection.execute("COMMIT")
            finishes.forEach { $0(nil) }
        } catch {
            if !connection.autocommit { try? connection.execute("ROLLBACK") }
            finishes.forEach { $0(error) }
        }
    }

    /// Closes the connection after any work already queued.
    func close() {
        queue.sync { connection.close() }
    }
}
