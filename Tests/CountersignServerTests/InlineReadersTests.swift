import Foundation
import Testing

@testable import CountersignServer

/// The connections `quickRead` lends to the calling thread: one borrower each, given back even when the
/// read throws, none lent once closed, and "none idle" told apart from a read that found nothing.
@Suite(.closesStorage) struct InlineReadersTests {
    static func file() async throws -> String {
        let h = try await Harness.make(.sqlite)
        guard case .sqlite(let path) = h.config.database else { throw ConfigurationError("not SQLite") }
        await h.close()
        return path
    }

    @Test func eachConnectionHasOneBorrowerAndComesBack() async throws {
        let readers = try InlineReaders(path: try await Self.file(), count: 1)
        let nested: Int?? = try readers.read { _ in try readers.read { _ in 1 } }
        #expect(nested == .some(nil), "the only connection is lent: the inner read gets none")
        struct Refused: Error {}
        #expect(throws: Refused.self) { try readers.read { _ in throw Refused() } }
        let after = try readers.read { c in
            try DirectAccountStore.account(c, sql: DirectAccountStore.accountByUsername, key: "nobody")
        }
        #expect(after == .some(nil), "given back after the throw; a read that finds nothing is not \"none idle\"")
    }

    @Test func aStatementErrorLeavesTheConnectionUsable() async throws {
        let readers = try InlineReaders(path: try await Self.file(), count: 1)
        #expect(throws: DirectSQLiteError.self) {
            try readers.read { c in try c.statement("SELECT no_such_column FROM accounts").run() }
        }
        #expect(try readers.read { c in try DirectMFAReader.recoveryCodesLeft(c, accountID: "x") } == 0)
    }

    @Test func closingWhileLentClosesOnReturn() async throws {
        let readers = try InlineReaders(path: try await Self.file(), count: 2)
        let inside = try readers.read { c -> Int in
            readers.close()
            // Still usable by its borrower until the read returns.
            return try DirectMFAReader.recoveryCodesLeft(c, accountID: "x")
        }
        #expect(inside == 0)
        #expect(try readers.read { _ in 1 } == nil, "none lent after close")
    }
}
