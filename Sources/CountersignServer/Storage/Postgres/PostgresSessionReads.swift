import Foundation
import PostgresNIO
import Synchronization

/// The device-session reads of concurrent requests on PostgreSQL, grouped the way sends are: while every
/// lane has a statement in flight, new reads wait and go together in the next one (`token_hash =
/// ANY($1)`), so under load a few dozen requests share one round trip, one plan of the three-table join
/// and one connection, while a lone request is read at once with no added wait. Nothing is cached: every
/// read is a statement that began after its request arrived, so a revocation committed before it is seen.
/// Each lane is a `PostgresLane` (its own connection and thread).
final class PostgresSessionReads: Sendable {
    typealias Row = PostgresSessionContext.Row
    private struct Waiting {
        var hash: String
        /// Takes the read's result (the row, nil, or the statement's error) and answers the caller.
        var answer: @Sendable (Result<Row?, any Error>) -> Void
    }
    private struct State {
        var waiting: [Waiting] = []
        var idle: [Int]
    }
    private let state: Mutex<State>
    private let lanes: [PostgresLane]
    /// Statements in flight at once: two keep the database busy while one waits for its answer.
    static let laneCount = 2
    /// The most reads one statement carries (the rest wait for the next).
    static let maxGroup = 64
    /// Statements run and reads they carried (tests and benchmarks).
    let statements = Atomic<Int>(0)
    let grouped = Atomic<Int>(0)

    init(lanes: [PostgresLane]) {
        precondition(!lanes.isEmpty)
        self.lanes = lanes
        state = Mutex(State(idle: Array(lanes.indices)))
    }

    /// The session stored under `tokenHash` (nil if none).
    func read(tokenHash: String) async throws -> Row? {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<Row?, any Error>) in
            let waiting = Waiting(hash: tokenHash) { result in c.resume(with: result) }
            let lane = state.withLock { s -> Int? in
                s.waiting.append(waiting)
                return s.idle.popLast()
            }
            // Detached: the drain serves many requests and takes none's task-locals (logger metadata).
            if let lane { Task.detached(executorPreference: lanes[lane].executor) { await self.drain(lane) } }
        }
    }

    private func drain(_ lane: Int) async {
        while true {
            let group = state.withLock { s -> [Waiting] in
                guard !s.waiting.isEmpty else {
                    s.idle.append(lane)
                    return []
                }
                let taken = Array(s.waiting.prefix(Self.maxGroup))
                s.waiting.removeFirst(taken.count)
                return taken
            }
            guard !group.isEmpty else { return }
            do {
                let hashes = Array(Set(group.map(\.hash)))
                let rows = try await lanes[lane].run { c, logger in
                    try await PostgresSessionContext.rows(c, tokenHashes: hashes, logger: logger)
                }
                var byHash: [String: Row] = [:]
                for row in rows { byHash[row.0.tokenHash] = row }
                statements.add(1, ordering: .relaxed)
                grouped.add(group.count, ordering: .relaxed)
                for w in group { w.answer(.success(byHash[w.hash])) }
            } catch {
                for w in group { w.answer(.failure(error)) }
            }
        }
    }
}
