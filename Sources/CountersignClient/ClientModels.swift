import Foundation

/// What the server returns, as the client sees it (docs/openapi.yaml).
public struct Account: Codable, Equatable, Sendable {
    public var id: String
    public var username: String
    public var name: String
    public var lastname: String
    public var settings: AccountSettings
    public var createdAt: Date
}

public struct AccountSettings: Codable, Equatable, Sendable {
    /// 0 (never), 5, 10, 30 or 60.
    public var reauthIntervalMinutes: Int
    public init(reauthIntervalMinutes: Int) { self.reauthIntervalMinutes = reauthIntervalMinutes }
}

public struct SignedInSession: Codable, Equatable, Sendable {
    public var token: String
    public var expiresAt: Date
    public var account: Account
}

public struct AuditEvent: Codable, Equatable, Sendable {
    public var id: Int64
    public var at: Date
    public var kind: String
    public var outcome: String
    public var address: String
    public var userAgent: String
}

public struct AuditPage: Codable, Equatable, Sendable {
    public var events: [AuditEvent]
    /// The path of the next page, nil on the last.
    public var next: String?
}

public struct CaptchaChallenge: Codable, Equatable, Sendable {
    public var algorithm: String
    public var challenge: String
    public var maxnumber: Int
    public var salt: String
    public var signature: String
}
