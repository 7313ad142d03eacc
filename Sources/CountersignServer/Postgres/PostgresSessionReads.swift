import Foundation
import PostgresNIO
import Synchronization

/// The device-session reads of concurrent requests on PostgreSQL, grouped the way sends are: while
/// `lanes` statements are in flight, new reads wait and go together in the next one (`token_hash =
/// ANY($1)`), so under load a few dozen requests share one round trip, one plan of the three-table join
/// and one pool lease, while a lone request is read at once with no added wait. Nothing is cached: every
/// read is a statement that began after its request arrived, so a revocation committed before it is seen.
final class PostgresSessionReads: Sendable {
    typealias Row = PostgresSessionContext.Row
    private struct Waiting {
        var hash: String
        var continuation: CheckedContinuation<Row?, any Error>
    }
    private struct State { var waiting: [Waiting] = []; var running = 0 }
    private let state = Mutex(State())
    private let database: @Sendable () -> any PostgresDatabase
    /// Statements in flight at once: two keep the pool busy while one waits for its answer.
    static let lanes = 2
    /// The most reads one statement carries (the rest wait for the next).
    static let maxGroup = 64
    /// Statements run and reads they carried (tests and benchmarks).
    let statements = Atomic<Int>(0)
    let grouped = Atomic<Int>(0)

    init(database: @escaping @Sendable () -> any PostgresDatabase) { self.database = database }

    /// Grouped reads over the pools of `database` (spread over its event loops); nil unless PostgreSQL.
    convenience init?(_ database: ServerDatabase) {
        guard case .postgres = database.location, let writer = database.database as? any PostgresDatabase else { return nil }
        self.init { (database.reader as? any PostgresDatabase) ?? writer }
    }

    func read(tokenHash: String) async throws -> Row? {
        try await withCheckedThrowingContinuation { c in
            let start = state.withLock { s -> Bool in
                s.waiting.append(Waiting(hash: tokenHash, continuation: c))
                guard s.running < Self.lanes else { return false }
                s.running += 1
                return true
            }
            // Detached: the drain serves many requests and takes none's task-locals (logger metadata).
            if start { Task.detached { await self.drain() } }
        }
    }

    private func drain() async {
        while true {
            let group = state.withLock { s -> [Waiting] in
                guard !s.waiting.isEmpty else { s.running -= 1; return [] }
                let taken = Array(s.waiting.prefix(Self.maxGroup))
                s.waiting.removeFirst(taken.count)
                return taken
            }
            guard !group.isEmpty else { return }
            do {
                let rows = try await PostgresSessionContext.read(database(), tokenHashes: Array(Set(group.map(\.hash))))
                var byHash: [String: Row] = [:]
                for row in rows { byHash[row.0.tokenHash] = row }
                statements.add(1, ordering: .relaxed)
                grouped.add(group.count, ordering: .relaxed)
                for w in group { w.continuation.resume(returning: byHash[w.hash]) }
            } catch {
                for w in group { w.continuation.resume(throwing: error) }
            }
        }
    }
}
