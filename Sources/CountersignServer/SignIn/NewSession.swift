import Foundation

/// A session a sign-in just started: the token for the client (stored only as its hash).
public struct NewSession: Sendable {
    public var token: String
    public var expiresAt: Date
    public var account: AccountRecord
}
