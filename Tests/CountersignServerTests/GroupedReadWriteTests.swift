import CountersignClient
import CountersignCrypto
import Foundation
import Synchronization
import Testing

@testable import CountersignServer

/// The grouping under the hot paths: the SQLite writer's group commit (`SQLiteWorker.write`) and
/// PostgreSQL's grouped device-session reads (`PostgresSessionReads`). Grouping must never mix up
/// callers, let one caller's failure undo another's write, or answer before the data is durable.
@Suite(.closesStorage) struct GroupedReadWriteTests {
    private func scratchWriter() throws -> (SQLiteWorker, String) {
        guard case .sqlite(let path) = try Backend.sqlite.freshLocation() else { throw ConfigurationError("no path") }
        // DirectSQLite opens, never creates: an empty file is an empty database.
        FileManager.default.createFile(atPath: path, contents: nil)
        let setup = try DirectSQLite(path: path, readOnly: false)
        try setup.execute("PRAGMA journal_mode=WAL")
        try setup.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        setup.close()
        return (try SQLiteWorker(label: "test.writer", path: path, readOnly: false), path)
    }

    /// 200 writes queued behind a busy writer go into one transaction; the ones that fail (a duplicate
    /// key, a thrown error after an insert) roll back alone; each caller gets its own result; and every
    /// caller that was answered finds its row from another connection (nothing answered before COMMIT).
    @Test func groupCommitKeepsEachWriteItsOwn() async throws {
        let (writer, path) = try scratchWriter()
        defer { writer.close() }
        struct Refused: Error { let n: Int }
        // Hold the writer's queue until all 200 writes wait, so they go as one group whatever the load.
        let hold = try await holdQueue(writer)
        let submitted = Task {
            try await withThrowingTaskGroup(of: (Int, Result<Int, any Error>).self) { group in
                for n in 0..<200 {
                    group.addTask {
                        let result: Result<Int, any Error>
                        do {
                            result = .success(
                                try await writer.write { c in
                                    try c.writeTransaction { () throws -> Int in
                                        let insert = try c.statement("INSERT INTO t (id, v) VALUES (?1, ?2)")
                                        // Writes 5, 15, … take write 1's key: whichever of them runs first holds it, the others fail.
                                        insert.bind(1, Int64(n % 10 == 5 ? 1 : n))
                                        insert.bind(2, "w\(n)")
                                        try insert.run()
                                        if n % 10 == 7 { throw Refused(n: n) }
                                        return n
                                    }
                                }
                            )
                        } catch {
                            result = .failure(error)
                        }
                        if case .success = result {
                            // Answered: committed, visible to a fresh reader.
                            let reader = try DirectSQLite(path: path, readOnly: true)
                            defer { reader.close() }
                            let s = try reader.statement("SELECT v FROM t WHERE v = ?1")
                            s.bind(1, "w\(n)")
                            var seen = false
                            try s.forEach { _ in seen = true }
                            #expect(seen, "write \(n) was answered before its row was committed")
                        }
                        return (n, result)
                    }
                }
                return try await group.reduce(into: [Int: Result<Int, any Error>]()) { $0[$1.0] = $1.1 }
            }
        }
        try await hold.release(whenWaiting: 200)
        let results = try await submitted.value
        var expected = Set<String>()
        for (n, result) in results {
            switch result {
            case .success(let value):
                #expect(value == n, "a caller got another's result")
                #expect(n % 10 != 7)
                expected.insert("w\(n)")
            case .failure(let error):
                if n % 10 == 7 {
                    #expect((error as? Refused)?.n == n)
                } else {
                    #expect(n % 10 == 5 || n == 1, "write \(n) failed: \(error)")
                }
            }
        }
        // Write 1 and the twenty writes to its key: exactly one of them holds it.
        #expect(results.filter { ($0.key == 1 || $0.key % 10 == 5) && (try? $0.value.get()) != nil }.count == 1)
        let reader = try DirectSQLite(path: path, readOnly: true)
        defer { reader.close() }
        var stored = Set<String>()
        try reader.statement("SELECT v FROM t").forEach { stored.insert($0.string(0)) }
        #expect(stored == expected, "exactly the successful writes are stored")
        #expect(
            writer.groups == 1 && writer.grouped == 200,
            "\(writer.groups) groups: the writes were not grouped"
        )
    }

    /// When the group's BEGIN IMMEDIATE cannot get the write lock (another process holds it past the busy
    /// timeout), every write of the group fails at once, unrun: none waits another busy timeout alone,
    /// and none is written after its caller was told it failed.
    /// Enough writes that one busy timeout each (5 s) is far from one for the group.
    static let groupedWrites = 6

    @Test func aGroupThatCannotBeginFailsEveryWriteUnrun() async throws {
        let (writer, path) = try scratchWriter()
        defer { writer.close() }
        let holder = try DirectSQLite(path: path, readOnly: false)
        defer { holder.close() }
        final class Count: Sendable { let n = Atomic<Int>(0) }
        let ran = Count()
        let hold = try await holdQueue(writer)
        let submitted = Task {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for n in 0..<Self.groupedWrites {
                    group.addTask {
                        do {
                            try await writer.write { c in
                                ran.n.add(1, ordering: .relaxed)
                                try c.writeTransaction { try c.execute("INSERT INTO t (v) VALUES ('w\(n)')") }
                            }
                            return true
                        } catch {
                            return false
                        }
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
        }
        try holder.execute("BEGIN IMMEDIATE")
        let started = ContinuousClock.now
        try await hold.release(whenWaiting: Self.groupedWrites)
        let results = try await submitted.value
        let took = ContinuousClock.now - started
        try holder.execute("ROLLBACK")
        #expect(
            results == Array(repeating: false, count: Self.groupedWrites),
            "a write succeeded while another connection held the lock"
        )
        #expect(ran.n.load(ordering: .relaxed) == 0, "a write of the failed group was run")
        // One busy timeout (5 s), not one per write (30 s); the margin is for a loaded host (9.7 s seen
        // with the whole suite running in parallel).
        #expect(took < .seconds(20), "the group took \(took)")
    }

    /// Occupies `writer`'s serial queue (a `run` that waits) until `release(whenWaiting:)`.
    private struct Hold {
        let gate: DispatchSemaphore
        let task: Task<Void, any Error>
        let writer: SQLiteWorker
        func release(whenWaiting n: Int) async throws {
            for _ in 0..<500 where writer.waiting < n { try await Task.sleep(for: .milliseconds(10)) }
            #expect(writer.waiting == n, "the writes did not all arrive")
            gate.signal()
            try await task.value
        }
    }

    private func holdQueue(_ writer: SQLiteWorker) async throws -> Hold {
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let task = Task {
            try await writer.run { _ in
                started.signal()
                gate.wait()
            }
        }
        // Off the cooperative pool: wait until the queue is really held.
        await withCheckedContinuation { c in
            DispatchQueue.global().async {
                started.wait()
                c.resume()
            }
        }
        return Hold(gate: gate, task: task, writer: writer)
    }

    /// A write that ends the whole group transaction (as an I/O error or a full disk does) fails alone:
    /// the writes before it in the group, already rolled back with it, are written again alone, and
    /// those after it too; every other caller succeeds and its row is there.
    @Test func aWriteThatEndsTheGroupTransactionFailsAlone() async throws {
        let (writer, path) = try scratchWriter()
        defer { writer.close() }
        struct Ended: Error {}
        let hold = try await holdQueue(writer)
        let submitted = Task {
            try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
                for n in 0..<20 {
                    group.addTask {
                        do {
                            _ = try await writer.write { c in
                                try c.writeTransaction {
                                    try c.execute("INSERT INTO t (id, v) VALUES (\(n), 'w\(n)')")
                                    // Write 7 ends the whole transaction, then fails.
                                    if n == 7 {
                                        try c.execute("ROLLBACK")
                                        throw Ended()
                                    }
                                }
                            }
                            return (n, true)
                        } catch is Ended {
                            return (n, false)
                        }
                    }
                }
                return try await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
            }
        }
        try await hold.release(whenWaiting: 20)
        let outcomes = try await submitted.value
        #expect(outcomes.count == 20 && outcomes.filter { !$0.value }.map(\.key) == [7])
        let reader = try DirectSQLite(path: path, readOnly: true)
        defer { reader.close() }
        var rows = Set<Int64>()
        try reader.statement("SELECT id FROM t").forEach { rows.insert($0.int64(0)) }
        #expect(rows == Set((0..<20).filter { $0 != 7 }.map(Int64.init)))
        // The writer goes on: the next group commits.
        _ = try await writer.write { c in
            try c.writeTransaction { try c.execute("INSERT INTO t (id, v) VALUES (100, 'after')") }
        }
    }

    /// A lone write (no group: its own BEGIN and COMMIT) that fails is reported failed and leaves nothing;
    /// the writer goes on.
    @Test func aLoneWriteIsItsOwnTransaction() async throws {
        let (writer, path) = try scratchWriter()
        defer { writer.close() }
        let one = try await writer.write { c in
            try c.writeTransaction {
                try c.execute("INSERT INTO t (id, v) VALUES (1, 'a')")
                return 1
            }
        }
        #expect(one == 1)
        await #expect(throws: DirectSQLiteError.self) {
            try await writer.write { c in
                try c.writeTransaction { try c.execute("INSERT INTO t (id, v) VALUES (1, 'b')") }
            }
        }
        _ = try await writer.write { c in
            try c.writeTransaction { try c.execute("INSERT INTO t (id, v) VALUES (2, 'c')") }
        }
        let reader = try DirectSQLite(path: path, readOnly: true)
        defer { reader.close() }
        var rows: [String] = []
        try reader.statement("SELECT v FROM t ORDER BY id").forEach { rows.append($0.string(0)) }
        #expect(rows == ["a", "c"])
    }

    /// Concurrent session reads on PostgreSQL share statements, and each caller gets its own session's
    /// device (or nothing for an unknown or revoked session), never another's.
    @Test(.enabled(if: Backend.available.contains(.postgres), "COUNTERSIGN_TEST_POSTGRES_URL is not set"))
    func groupedSessionReadsAnswerEachCallerAlone() async throws {
        try await withLiveServer(.postgres) { server, h in
            var people: [Person] = []
            for i in 0..<6 { people.append(try await Person.make("reader\(i)", server: server)) }
            let revoked = try await Person.addDevice("reader0", sdk: people[0].sdk, name: "old")
            try await people[0].sdk.revokeDevice(id: revoked.device.id)
            let lanes = try #require((h.storage as? PostgresStorage)?.lanes.sessions)
            let reads = PostgresSessionReads(lanes: lanes)
            var asks: [(hash: String, device: String?)] = people.map {
                (TokenHash.hex($0.sdk.deviceToken!), $0.device.id)
            }
            asks.append((TokenHash.hex(revoked.sdk.deviceToken!), nil))
            asks.append((TokenHash.hex("csd_unknown"), nil))
            let answers = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                for i in 0..<300 {
                    let ask = asks[i % asks.count]
                    group.addTask { (i, try await reads.read(tokenHash: ask.hash)?.1.id) }
                }
                return try await group.reduce(into: [(Int, String?)]()) { $0.append($1) }
            }
            #expect(answers.count == 300)
            for (i, device) in answers { #expect(device == asks[i % asks.count].device, "read \(i)") }
            #expect(reads.grouped == 300)
            #expect(reads.statements < 300, "the reads were not grouped")
            // The storage's own grouped reads answer the same.
            for ask in asks {
                #expect(try await h.storage.deviceSessionContext(tokenHash: ask.hash)?.1.id == ask.device)
            }
            // Through the server too: many devices at once, each its own (empty) queue, the revoked one refused.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<60 {
                    let person = people[i % people.count]
                    group.addTask {
                        let page = try await person.sdk.fetchMessages()
                        #expect(page.messages.isEmpty)
                    }
                }
                group.addTask {
                    #expect(await problemCode { _ = try await revoked.sdk.fetchMessages() } == .unauthenticated)
                }
                try await group.waitForAll()
            }
        }
    }
}
