import CountersignClient
import Foundation
import PostgresNIO
import SQLKit
import Testing

@testable import CountersignServer

/// The PostgreSQL lanes (`PostgresLane`): connections of their own for send batches and session reads,
/// with generic plans pinned to index lookups.
@Suite(.closesStorage, .enabled(if: Backend.available.contains(.postgres), "COUNTERSIGN_TEST_POSTGRES_URL is not set"))
struct PostgresLaneTests {
    /// Every statement a lane runs is planned as index scans and nested loops, on empty tables too,
    /// where the planner would otherwise prefer scanning (and the cached plan would keep scanning as the
    /// tables grow).
    @Test func laneStatementsPlanIndexLookupsWhateverTheTableSize() async throws {
        let h = try await Harness.make(.postgres)
        let lanes = try #require((h.storage as? PostgresStorage)?.lanes)
        // (name, SQL, reads rows of a table)
        let statements = [
            ("session read", PostgresSessionContext.sql, true),
            ("account locks", PostgresSendStore.LockAccounts.sql, true),
            ("batch reads", PostgresSendStore.BatchReads.sql, true),
            ("inserts", PostgresSendStore.InsertMessages.sql, false),
        ]
        do {
            for (i, (name, sql, reads)) in statements.enumerated() {
                let parameters = Set(sql.matches(of: /\$(\d+)/).map { Int($0.1)! }).count
                let plan = try await lanes.send.run { c, logger in
                    try await c.query(PostgresQuery(unsafeSQL: "PREPARE plan_check_\(i) AS \(sql)"), logger: logger)
                    let nulls = Array(repeating: "NULL", count: parameters).joined(separator: ", ")
                    var lines: [String] = []
                    for try await row in try await c.query(
                        PostgresQuery(unsafeSQL: "EXPLAIN EXECUTE plan_check_\(i)(\(nulls))"),
                        logger: logger
                    ) {
                        lines.append(try row.decode(String.self))
                    }
                    try await c.query(PostgresQuery(unsafeSQL: "DEALLOCATE plan_check_\(i)"), logger: logger)
                    return lines.joined(separator: "\n")
                }
                #expect(
                    !plan.contains("Seq Scan") && !plan.contains("Hash") && !plan.contains("Merge Join"),
                    "\(name):\n\(plan)"
                )
                #expect(!reads || plan.contains("Index Scan"), "\(name) reads no index:\n\(plan)")
            }
        } catch {
            await h.close()
            throw error
        }
        await h.close()
    }

    /// The PostgreSQL lanes (their own connections for send batches and session reads) open again after
    /// the database drops them: a restarted or failed-over server costs no restart of ours.
    @Test func postgresLanesReconnectAfterTheirConnectionsAreDropped() async throws {
        try await withLiveServer(.postgres) { server, h in
            let alice = try await Person.make("lanealice", server: server)
            let bob = try await Person.make("lanebob", server: server)
            _ = try await alice.send("before", to: ["lanebob"])
            let sql = try #require(h.storage.database as? any SQLDatabase)
            let dropped = try await sql.raw(
                """
                SELECT pg_terminate_backend(pid) AS gone FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
                """
            ).all()
            #expect(dropped.count >= 2, "the send lane and a session lane had connections")
            try await Task.sleep(for: .milliseconds(300))
            // Session read and send batch both on fresh lane connections; each answered once, nothing lost.
            _ = try await alice.send("after", to: ["lanebob"])
            #expect(try await bob.inbox().map(\.1) == ["before", "after"])
        }
    }

    /// Units of work sent to one lane at once run one after another on its one connection: each sees a
    /// transaction of its own (none begins inside another's), and after `close()` none runs any more.
    @Test func aLaneRunsOneUnitAtATimeAndNoneAfterClose() async throws {
        let h = try await Harness.make(.postgres)
        let lane = try #require((h.storage as? PostgresStorage)?.lanes.send)
        do {
            let units = try await withThrowingTaskGroup(of: [Int64].self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        try await lane.run { c, logger in
                            try await c.query("BEGIN", logger: logger)
                            var ids: [Int64] = []
                            for _ in 0..<2 {
                                for try await id in try await c.query("SELECT txid_current()", logger: logger).decode(
                                    Int64.self
                                ) { ids.append(id) }
                                await Task.yield()
                            }
                            try await c.query("COMMIT", logger: logger)
                            return ids
                        }
                    }
                }
                return try await group.reduce(into: [[Int64]]()) { $0.append($1) }
            }
            #expect(units.count == 20 && units.allSatisfy { $0.count == 2 && $0[0] == $0[1] })
            #expect(Set(units.map { $0[0] }).count == 20, "two units shared a transaction")
        } catch {
            await h.close()
            throw error
        }
        await h.close()
        await #expect(throws: PostgresLane.Closed.self) { try await lane.run { _, _ in 1 } }
    }

    /// A unit of work that gets no answer (here a statement that sleeps past the deadline, as a half-open
    /// connection would) fails after the lane's deadline with the connection closed, and the next unit
    /// reconnects: one stalled statement does not hold every send behind it until TCP gives up.
    @Test func aStalledUnitFailsAtTheDeadlineAndTheNextReconnects() async throws {
        let h = try await Harness.make(.postgres)
        let lane = try #require((h.storage as? PostgresStorage)?.lanes.send)
        do {
            let stalled = Task {
                try await lane.run { c, logger in
                    // Past the lanes' own statement_timeout (8 s): the stall the deadline is for is silence.
                    try await c.query("SET statement_timeout = 0", logger: logger)
                    return try await c.query("SELECT pg_sleep(30)", logger: logger).collect().count
                }
            }
            try await Task.sleep(for: .milliseconds(300))
            // Queued behind the stalled unit: answered once the deadline closed its connection, on a new one.
            let started = ContinuousClock.now
            let behind = try await lane.run { c, logger in try await c.query("SELECT 2", logger: logger).collect().count
            }
            let waited = ContinuousClock.now - started
            #expect(behind == 1)
            // The deadline (8 s) and not the stall (30 s), with room for a loaded machine.
            #expect(waited >= .seconds(8) && waited < .seconds(26), "\(waited)")
            await #expect(throws: PostgresLane.DeadlineExceeded.self) { try await stalled.value }
        } catch {
            await h.close()
            throw error
        }
        await h.close()
    }
}
