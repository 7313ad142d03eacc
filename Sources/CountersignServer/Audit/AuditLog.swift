import CountersignAPI
import Foundation

/// The accounts' audit log (docs/DESIGN.md, "Audit"): given at construction to every feature that
/// writes one, so that none writes through another's service. Rows are dated by the injected clock.
public final class AuditLog: Sendable {
    let store: any AuditStore
    let clock: any WallClock

    public init(store: any AuditStore, clock: any WallClock) {
        self.store = store
        self.clock = clock
    }

    /// Writes one row now, on its own.
    func record(_ accountID: String, _ kind: AuditKind, _ outcome: AuditOutcome, _ origin: RequestOrigin) async throws {
        let e = entry(accountID, kind, outcome, origin)
        try await store.record(
            accountID: e.accountID,
            kind: e.kind,
            outcome: e.outcome,
            address: e.address,
            userAgent: e.userAgent,
            at: e.at
        )
    }

    /// A row dated now, for a store that writes it in the transaction of what it records.
    func entry(_ accountID: String, _ kind: AuditKind, _ outcome: AuditOutcome, _ origin: RequestOrigin) -> AuditEntry {
        AuditEntry(
            accountID: accountID,
            kind: kind.rawValue,
            outcome: outcome.text,
            address: origin.address,
            userAgent: origin.userAgent,
            at: clock.now()
        )
    }

    /// The account's events, newest first: at most `limit` (1 to 100), ids below `before` when given.
    func events(accountID: String, before: Int64?, limit: Int) async throws -> [AuditEvent] {
        try await store.auditEvents(accountID: accountID, before: before, limit: max(1, min(limit, 100)))
    }
}
