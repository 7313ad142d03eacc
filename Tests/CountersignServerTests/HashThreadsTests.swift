import Foundation
import Testing

@testable import CountersignServer

/// Password hashes run below the event loops' priority, and only their own threads are lowered.
@Suite(.closesStorage) struct HashThreadsTests {
    @Test func hashesRunAtALowerPriorityOnThreadsOfTheirOwn() async throws {
        #if os(Linux)
        let before = HashThreads.currentNiceness()
        let inside = try await withThrowingTaskGroup(of: Int32.self) { group in
            for _ in 0..<(2 * HashThreads.threadCount) {
                group.addTask { try await HashThreads.run { HashThreads.currentNiceness() } }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(inside.allSatisfy { $0 == HashThreads.niceness }, "\(inside)")
        // The lowering stayed on the hash threads: this task's thread and a fresh one keep their priority.
        #expect(HashThreads.currentNiceness() == before)
        let elsewhere = await Task.detached { HashThreads.currentNiceness() }.value
        #expect(elsewhere == before)
        #expect(before < HashThreads.niceness)
        #endif
    }
}
