import CountersignAPI
import Foundation

/// A relying party an administrator registered (docs/PROTOCOL.md §6.2): its redirect URIs compared exactly,
/// whether it is confidential (a secret the server made, kept as its SHA-256) or public (a native or browser
/// app: PKCE required), and its policy: who may use it and what sign-in it needs.
public struct OIDCClient: Equatable, Sendable {
    /// What a session must have done to sign in to the client; a weaker one is stepped up, never refused.
    public enum Policy: String, Sendable, CaseIterable {
        /// The password (and the account's second factor, if it has one turned on).
        case password
        /// A second factor, or a passkey with user verification.
        case mfa
        /// A passkey: nothing a phishing page could relay.
        case phishingResistant = "phishing-resistant"
    }
    public enum Algorithm: String, Sendable, CaseIterable {
        case es256 = "ES256"
        case rs256 = "RS256"
    }

    public var id: String
    public var name: String
    /// SHA-256 of the secret, hex; nil for a public client.
    public var secretHash: String?
    public var redirectURIs: [String]
    public var postLogoutRedirectURIs: [String]
    public var backchannelLogoutURI: String?
    /// No consent screen: the administrator vouches for the application.
    public var firstParty: Bool
    public var policy: Policy
    /// Usernames that may use the client; empty: every account.
    public var allowedUsers: [String]
    /// May be given refresh tokens without asking for `offline_access`.
    public var offlineAccess: Bool
    public var idTokenAlgorithm: Algorithm
    /// `sub` differs per client (a pairwise identifier) instead of the account's one opaque ID.
    public var pairwise: Bool
    /// May pair authenticators by OpenID Connect (docs/PROTOCOL.md §6.11): its authorization requests may carry
    /// a `mobilePayload`. Off unless an administrator turns it on: a client that may pair can add an
    /// authenticator it controls to any account that allows it.
    public var pairing: Bool = false
    /// Defined in the server's configuration file (`oidc-clients`): applied at each start, changed only there.
    public var managed: Bool = false
    public var createdAt: Date

    public var isPublic: Bool { secretHash == nil }

    /// 3 to 64 characters of a-z, 0-9, '.', '_' and '-', starting and ending with a letter or digit.
    static func isClientID(_ id: String) -> Bool {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789._-")
        let ends = Set("abcdefghijklmnopqrstuvwxyz0123456789")
        guard (3...64).contains(id.count), let first = id.first, let last = id.last else { return false }
        return id.allSatisfy(allowed.contains) && ends.contains(first) && ends.contains(last)
    }

    /// The client with every field checked as registration checks it.
    func validated() throws(OIDCClientError) -> OIDCClient {
        guard Self.isClientID(id) else { throw .invalidClientID(id) }
        guard (1...100).contains(name.count),
            name.unicodeScalars.allSatisfy({ $0.properties.generalCategory != .control && $0.value != 0x7F })
        else { throw .invalidName }
        guard !redirectURIs.isEmpty else { throw .noRedirectURI }
        for uri in redirectURIs + postLogoutRedirectURIs { _ = try RedirectURI(registering: uri) }
        if let uri = backchannelLogoutURI {
            // The server posts there itself: https only, never its own loopback.
            guard try !RedirectURI(registering: uri).isLoopback, uri.hasPrefix("https://") else {
                throw .invalidRedirectURI(uri, "a back-channel logout URI is https (the server posts to it)")
            }
        }
        for user in allowedUsers where UsernameRule.normalised(user) != user { throw .invalidUser(user) }
        return self
    }

    /// The registered redirect URI `requested` is, if any.
    func redirectURI(_ requested: String) -> RedirectURI? {
        redirectURIs.lazy.compactMap { try? RedirectURI(registering: $0) }
            .first { $0.matches(requested, anyLoopbackPort: isPublic) }
    }

    func postLogoutRedirectURI(_ requested: String) -> RedirectURI? {
        postLogoutRedirectURIs.lazy.compactMap { try? RedirectURI(registering: $0) }
            .first { $0.matches(requested, anyLoopbackPort: isPublic) }
    }
}
