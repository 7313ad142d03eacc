import Foundation
import Synchronization

/// Copies the write-ahead log into the database file in the background: `PRAGMA wal_checkpoint(PASSIVE)`
/// on a connection of its own, on a thread of its own, every `interval`. The writers checkpoint inline
/// only past `inlineAfterPages`, so commits do not run checkpoints (and their fsync): with SQLite's
/// default (1000 pages) the commit that crossed the threshold paid for copying the whole log, and every
/// send queued behind that commit waited too (bench-push.sh's p99). A passive checkpoint takes no lock a
/// writer or reader needs; SQLite starts the log over at the first write after one has caught up.
final class SQLiteCheckpointer: Sendable {
    /// The writers' `wal_autocheckpoint`: a safety net for writes so continuous that the background
    /// checkpoint never catches up.
    static let inlineAfterPages = 16_000
    /// `journal_size_limit`: the WAL file is cut back to this when the log starts over.
    static let walSizeLimit = 64 << 20

    private let stopping = Atomic<Bool>(false)
    private let stopped = DispatchSemaphore(value: 0)
    /// Checkpoints that ran (for tests).
    let runs = Atomic<Int>(0)

    init(path: String, interval: Duration = .milliseconds(250)) throws {
        let connection = try DirectSQLite(path: path, readOnly: false)
        let nanos = interval.components.seconds * 1_000_000_000 + interval.components.attoseconds / 1_000_000_000
        let wal = path + "-wal"
        let thread = Thread { [self] in
            var copied: timespec?
            while !stopping.load(ordering: .relaxed) {
                var ts = timespec(tv_sec: Int(nanos / 1_000_000_000), tv_nsec: Int(nanos % 1_000_000_000))
                nanosleep(&ts, nil)
                // Nothing written since the last checkpoint (the WAL file unchanged): no checkpoint, no
                // fsync. An idle database costs a stat per tick.
                var st = stat()
                let modified = stat(wal, &st) == 0 ? st.st_mtim : nil
                if let modified, let copied, modified.tv_sec == copied.tv_sec, modified.tv_nsec == copied.tv_nsec {
                    continue
                }
                // A failure (the file busy past the timeout) is retried at the next tick.
                if (try? connection.checkpointPassive()) != nil {
                    copied = modified
                    runs.add(1, ordering: .relaxed)
                }
            }
            connection.close()
            stopped.signal()
        }
        thread.name = "countersign.sqlite.checkpoint"
        thread.start()
    }

    /// Stops the thread and closes its connection (after a checkpoint in progress).
    func close() {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        stopped.wait()
    }
}
