import CountersignAPI
import Foundation

/// The storage the audit log needs. Each backend's storage implements it.
public protocol AuditStore: Sendable {
    func record(
        accountID: String,
        kind: String,
        outcome: String,
        address: String,
        userAgent: String,
        at: Date
    ) async throws
    /// Newest first, ids below `before` when given.
    func auditEvents(accountID: String, before: Int64?, limit: Int) async throws -> [AuditEvent]
}

extension AuditEvent {
    /// The account ID of audit rows for usernames without an account: written so that a refusal costs
    /// the same whether the name exists, shown to no one, purged after a day.
    public static let unknownAccountID = ""
}

/// An audit row to write (`AuditStore.record` takes the same fields; the stores that write a row in the
/// same transaction as what it records take it whole).
public struct AuditEntry: Equatable, Sendable {
    public var accountID: String
    public var kind: String
    public var outcome: String
    public var address: String
    public var userAgent: String
    public var at: Date
}
