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

    /// A write waiting for its group: `run` does its work (inside the group's transaction, or alone) and
    /// returns whether it succeeded and how to answer its caller once the group's fate is known; `fail`
    /// answers it with an error without running it.
    private struct Job {
        var run: @Sendable (DirectSQLite) -> Ran
        var fail: @Sendable (any Error) -> Void
    }
    private struct Ran {
        var succeeded: Bool
        /// nil: answer with the write's own result; an error: answer with it instead.
        var answer: @Sendable ((any Error)?) -> Void
    }
    private let pending: GroupedQueue<Job>

    /// `maxGroup`: at most this many writes share one group's transaction.
    init(label: String, path: String, readOnly: Bool, maxGroup: Int = 256) throws {
        queue = DispatchQueue(label: label)
        pending = GroupedQueue(maxGroup: maxGroup)
        connection = try DirectSQLite(path: path, readOnly: readOnly)
    }

    func run<T: Sendable>(_ work: @escaping @Sendable (DirectSQLite) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in
            queue.async { c.resume(with: Result { try work(self.connection) }) }
        }
    }

    /// Runs `work` in the next group commit (see the type's comment). `work` must make its changes
    /// inside its own `writeTransaction` (a savepoint inside a group, a transaction alone); its result is
    /// handed back only once the whole group has committed, and a failed COMMIT fails every write of the group.
    func write<T: Sendable>(_ work: @escaping @Sendable (DirectSQLite) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, any Error>) in
            let job = Job(
                run: { connection in
                    let result = Result { try work(connection) }
                    let succeeded = if case .success = result { true } else { false }
                    return Ran(succeeded: succeeded) { error in
                        if let error { c.resume(throwing: error) } else { c.resume(with: result) }
                    }
                },
                fail: { c.resume(throwing: $0) }
            )
            if let drainer = pending.add(job) {
                queue.async { self.pending.drainNow(drainer) { self.commit($0) } }
            }
        }
    }

    /// Writes submitted and not yet taken into a group; groups committed and the writes in them (tests).
    var waiting: Int { pending.waiting }
    var groups: Int { pending.groups.load(ordering: .relaxed) }
    var grouped: Int { pending.grouped.load(ordering: .relaxed) }

    /// Each job alone: its own BEGIN IMMEDIATE and COMMIT (its writeTransaction), its own answer.
    private func alone(_ jobs: ArraySlice<Job>) {
        for job in jobs { job.run(connection).answer(nil) }
    }

    private func commit(_ jobs: [Job]) {
        guard jobs.count > 1 else {
            alone(jobs[...])
            return
        }
        do {
            try connection.execute("BEGIN IMMEDIATE")
        } catch {
            // The write lock was not had within the busy timeout (or the file is unusable): trying each
            // write alone would wait that long again per write. They all fail unrun, retryable.
            jobs.forEach { $0.fail(error) }
            return
        }
        connection.inGroup = true
        var ran: [Ran] = []
        ran.reserveCapacity(jobs.count)
        for (i, job) in jobs.enumerated() {
            let r = job.run(connection)
            // Some errors (an I/O error, a full disk) end the whole transaction, not only the savepoint,
            // and so do the writes before this one. This one answers with its own error (or, had it
            // succeeded, with the loss); those before are run again alone, untouched by its failure,
            // their first answers dropped unsent; those after run alone.
            if connection.autocommit {
                connection.inGroup = false
                r.answer(
                    r.succeeded
                        ? DirectSQLiteError(code: 4, message: "the write was rolled back with its group; retry") : nil
                )
                alone(jobs[..<i])
                alone(jobs[(i + 1)...])
                return
            }
            ran.append(r)
        }
        connection.inGroup = false
        do {
            try connection.execute("COMMIT")
            ran.forEach { $0.answer(nil) }
        } catch {
            if !connection.autocommit { try? connection.execute("ROLLBACK") }
            ran.forEach { $0.answer(error) }
        }
    }

    /// Closes the connection after any work already queued.
    func close() {
        queue.sync { connection.close() }
    }
}
