import Foundation
import Synchronization

/// Group commit for sends on PostgreSQL (`MessageStore.submit`): requests that arrive while a batch is
/// being written wait and go into the next one, so under load many sends share one transaction (one
/// commit, one multi-row insert) while a lone send is written at once, with no added wait.
final class SendBatcher: Sendable {
    private struct Pending {
        var request: StoreRequest
        var continuation: CheckedContinuation<StoreOutcome, any Error>
    }
    private let pending: GroupedQueue<Pending>
    /// Writes one batch in one transaction (`MessageStore.store`).
    private let store: @Sendable ([StoreRequest]) async throws -> [StoreOutcome]
    /// Where batches run: the send lane's thread, else the cooperative pool.
    private let executor: (any TaskExecutor)?

    init(
        executor: (any TaskExecutor)?,
        maxBatch: Int = 128,
        store: @escaping @Sendable ([StoreRequest]) async throws -> [StoreOutcome]
    ) {
        self.store = store
        self.executor = executor
        pending = GroupedQueue(maxGroup: maxBatch)
    }

    func submit(_ request: StoreRequest) async throws -> StoreOutcome {
        try await withCheckedThrowingContinuation { c in
            guard let drainer = pending.add(Pending(request: request, continuation: c)) else { return }
            // Detached: the drain serves many requests and takes none's task-locals (logger metadata).
            Task.detached(executorPreference: executor) { await self.pending.drain(drainer) { await self.write($0) } }
        }
    }

    private func write(_ batch: [Pending]) async {
        do {
            let outcomes = try await store(batch.map(\.request))
            for (p, outcome) in zip(batch, outcomes) { p.continuation.resume(returning: outcome) }
        } catch  where batch.count > 1 && !DatabaseFailure.isConnectionLevel(error) {
            // One bad request must not fail the others: write each alone, each with its own answer. Not
            // when the connection failed: every request would fail again, each after its own wait.
            for p in batch {
                do {
                    p.continuation.resume(returning: try await store([p.request]).first ?? .idReused)
                } catch {
                    p.continuation.resume(throwing: error)
                }
            }
        } catch {
            batch.forEach { $0.continuation.resume(throwing: error) }
        }
    }
}
