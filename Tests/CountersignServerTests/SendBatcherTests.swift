import Foundation
import Testing

@testable import CountersignServer

/// Group commit's failure paths: a statement-level failure of a batch is retried request by request (one
/// bad request must not fail the others); a connection-level one fails the whole batch at once.
@Suite(.closesStorage) struct SendBatcherTests {
    /// A store whose first write waits (so the requests behind it form one batch) and whose later writes
    /// throw `failure`; counts the writes.
    final class FailingStore: @unchecked Sendable {
        let failure: any Error
        private let lock = NSLock()
        private var calls: [Int] = []
        init(failure: any Error) { self.failure = failure }
        var writes: [Int] { lock.withLock { calls } }

        func store(_ batch: [StoreRequest]) async throws -> [StoreOutcome] {
            let first = lock.withLock {
                calls.append(batch.count)
                return calls.count == 1
            }
            if first {
                try await Task.sleep(for: .milliseconds(300))
                return batch.map { _ in .idReused }
            }
            throw failure
        }
    }

    static func request(_ i: Int) -> StoreRequest {
        let now = Date()
        let record = MessageRecord(
            id: String(format: "%032x", i),
            senderAccountID: "a",
            senderDeviceID: "d",
            senderUsername: "alice",
            recipients: ["bob"],
            envelope: [1],
            digest: "",
            acceptedAt: now,
            deliverAt: now,
            expiresAt: now,
            recipientDevices: 0,
            fetchedBy: 0,
            acknowledgedBy: 0,
            cancelled: false
        )
        return StoreRequest(message: record, senderSigningKeyID: "k", keyIDs: [])
    }

    /// The first write (1 request), then one batch of the 9 that arrived meanwhile, then what the failure
    /// makes of it.
    static func writes(failing failure: any Error) async throws -> [Int] {
        let store = FailingStore(failure: failure)
        let batcher = SendBatcher(executor: nil, maxBatch: 128) { try await store.store($0) }
        let first = Task { try await batcher.submit(request(0)) }
        try await Task.sleep(for: .milliseconds(100))
        let rest = (1..<10).map { i in Task { try await batcher.submit(request(i)) } }
        _ = try await first.value
        for task in rest { await #expect(throws: (any Error).self) { try await task.value } }
        return store.writes
    }

    @Test func aStatementFailureIsRetriedRequestByRequest() async throws {
        struct ConstraintViolation: Error {}
        #expect(try await Self.writes(failing: ConstraintViolation()) == [1, 9] + Array(repeating: 1, count: 9))
    }

    @Test func aConnectionFailureFailsTheBatchAtOnce() async throws {
        for failure: any Error in [
            PostgresLane.DeadlineExceeded(seconds: 10), PostgresLane.Closed(),
            DirectSQLiteError(code: 10, message: "disk I/O error"),
        ] {
            #expect(try await Self.writes(failing: failure) == [1, 9], "\(failure)")
        }
    }
}
