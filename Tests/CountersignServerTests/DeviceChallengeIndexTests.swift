import Foundation
import Logging
import SQLKit
import Testing

@testable import CountersignServer

/// The device challenges' purge (every 10 minutes) and the one nonce per session binding are looked up by
/// index, not by scanning the table (migration 2026-11-30-03).
@Suite(.closesStorage) struct DeviceChallengeIndexTests {
    @Test func thePurgeAndTheBindingsNonceUseAnIndex() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let database = try await OpenedStorages.open(try Backend.sqlite.freshLocation(), logger: logger)
        do {
            let sql = database.database as! any SQLDatabase
            func plan(_ query: SQLQueryString) async throws -> String {
                try await sql.raw("EXPLAIN QUERY PLAN " + query).all()
                    .map { try $0.decode(column: "detail", as: String.self) }.joined(separator: "; ")
            }
            let purge = try await plan("DELETE FROM device_challenges WHERE expires_at <= \(bind: 1)")
            #expect(purge.contains("device_challenges_expiry"), "\(purge)")
            let nonce = try await plan(
                "DELETE FROM device_challenges WHERE kind = \(bind: "resume-next") AND subject = \(bind: "b")"
            )
            #expect(nonce.contains("device_challenges_subject"), "\(nonce)")
        } catch {
            await database.close()
            throw error
        }
        await database.close()
    }
}
