import Foundation

/// An account session as stored: the SHA-256 of its token, never the token.
public struct SessionRecord: Equatable, Sendable {
    public var tokenHash: String
    public var accountID: String
    public var createdAt: Date
    public var lastUsedAt: Date
    public var authenticatedAt: Date
    public var expiresAt: Date
    public var address: String
    public var userAgent: String
    /// The passkey a discoverable sign-in made this session with: removing the passkey ends it.
    public var passkeyID: String? = nil
    /// The binding this browser session was resumed from or bound to (docs/PROTOCOL.md §1.1).
    public var bindingID: String? = nil
    /// How it was authenticated, as RFC 8176 `amr` values (`SessionMethods`): what an ID token says.
    public var methods: [String] = SessionMethods.passwordOnly
}
