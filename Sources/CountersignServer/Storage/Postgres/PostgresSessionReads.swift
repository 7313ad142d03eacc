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
    /// One drainer per lane.
    private let grouping: GroupedQueue<Waiting>
    private let lanes: [PostgresLane]
    /// Statements in flight at once: two keep the database busy while one waits for its answer.
    static let laneCount = 2
    /// The most reads one statement carries (the rest wait for the next).
    static let maxGroup = 64
    /// Statements run and the reads they carried (tests and benchmarks).
    var statements: Int { grouping.groups.load(ordering: .relaxed) }
    var grouped: Int { grouping.grouped.load(ordering: .relaxed) }

    init(lanes: [PostgresLane]) {
        self.lanes = lanes
        grouping = GroupedQueue(drainers: lanes.count, maxGroup: Self.maxGroup)
    }

    /// The session stored under `tokenHash` (nil if none).
    func read(tokenHash: String) async throws -> Row? {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<Row?, any Error>) in
            guard let lane = grouping.add(Waiting(hash: tokenHash) { c.resume(with: $0) }) else { return }
            // Detached: the drain serves many requests and takes none's task-locals (logger metadata).
            Task.detached(executorPreference: lanes[lane].executor) {
                await self.grouping.drain(lane) { await self.read($0, on: self.lanes[lane]) }
            }
        }
    }

    private func read(_ group: [Waiting], on lane: PostgresLane) async {
        do {
            let hashes = Array(Set(group.map(\.hash)))
            let rows = try await lane.run { c, logger in
                try await PostgresSessionContext.rows(c, tokenHashes: hashes, logger: logger)
            }
            var byHash: [String: Row] = [:]
            for row in rows { byHash[row.0.tokenHash] = row }
            for w in group { w.answer(.success(byHash[w.hash])) }
        } catch {
            for w in group { w.answer(.failure(error)) }
        }
    }
}
