import Foundation

/// A signing key of the provider as stored: its private half sealed (`SecretBox`, bound to its `kid`).
public struct OIDCSigningKeyRecord: Equatable, Sendable {
    public var kid: String
    public var algorithm: OIDCClient.Algorithm
    public var sealedPrivateKey: [UInt8]
    public var createdAt: Date
    /// When a newer key took over signing; it stays published until `publishedUntil`.
    public var retiredAt: Date?
    public var publishedUntil: Date?
}

/// What a sign-in at the provider granted one client: the code's and every token's family. Revoking it (a code
/// redeemed twice, a refresh token used twice, the account's sessions ending) ends every token of it.
public struct OIDCGrant: Equatable, Sendable {
    public var id: String
    public var clientID: String
    public var accountID: String
    public var scope: [String]
    /// The provider session (`sid`): the web client's session binding, or its session.
    public var sessionID: String
    public var authTime: Date
    public var methods: [String]
    public var nonce: String?
    public var createdAt: Date
    public var revokedAt: Date?
    /// A grant whose request carried a mobile payload (docs/PROTOCOL.md §6.11): SHA-256 of the payload and of
    /// the key it named, base64url, for the claim of its first ID token.
    public var pairingPayload: String? = nil
    public var pairingKey: String? = nil
}

/// An authorization code as stored (its SHA-256): single use, bound to its grant, redirect URI and PKCE challenge.
public struct OIDCCodeRecord: Equatable, Sendable {
    public var codeHash: String
    public var grantID: String
    public var redirectURI: String
    /// S256 challenge; nil when the request had none.
    public var codeChallenge: String?
    public var expiresAt: Date
}

/// A token the provider issued (its SHA-256): an access token or a refresh token, of one grant.
public struct OIDCTokenRecord: Equatable, Sendable {
    public enum Kind: String, Sendable { case access, refresh }
    public var tokenHash: String
    public var grantID: String
    public var kind: Kind
    public var expiresAt: Date
    public var createdAt: Date
}

/// What redeeming a code or a refresh token came to.
public enum OIDCRedemption: Equatable, Sendable {
    case redeemed(OIDCGrant, code: OIDCCodeRecord?)
    /// Unknown or expired.
    case unknown
    /// Used before: the grant (given) was revoked with everything it issued.
    case reused(OIDCGrant?)
}

/// The provider's storage (docs/PROTOCOL.md §6): clients, signing keys, consents, grants, codes and tokens.
public protocol OIDCStore: Sendable {
    func oidcClients() async throws -> [OIDCClient]
    func oidcClient(id: String) async throws -> OIDCClient?
    /// False when a client with the ID exists.
    func addOIDCClient(_ client: OIDCClient) async throws -> Bool
    /// False when there is no such client.
    func updateOIDCClient(_ client: OIDCClient) async throws -> Bool
    /// Removes the client with its consents and revokes its grants. False when there is none.
    func removeOIDCClient(id: String, now: Date) async throws -> Bool

    func oidcSigningKeys() async throws -> [OIDCSigningKeyRecord]
    /// Adds `key` as the signer of its algorithm: the one signing before is retired, published until `until`.
    func rotateOIDCSigningKey(_ key: OIDCSigningKeyRecord, retiredPublishedUntil until: Date) async throws
    /// Deletes keys published no longer than `now`.
    func purgeOIDCSigningKeys(now: Date) async throws

    func oidcConsent(accountID: String, clientID: String) async throws -> [String]?
    func setOIDCConsent(accountID: String, clientID: String, scope: [String], at: Date) async throws
    func oidcConsents(accountID: String) async throws -> [(clientID: String, scope: [String], at: Date)]
    /// Forgets the consent and revokes the account's grants to the client; the grants it revoked, or nil when
    /// there was no consent.
    func removeOIDCConsent(accountID: String, clientID: String, now: Date) async throws -> [OIDCGrant]?
    func oidcGrant(id: String) async throws -> OIDCGrant?
    /// Revokes one grant (an authorization whose browser signed out while it was made).
    func revokeOIDCGrant(id: String, now: Date) async throws

    /// Stores a grant with its code, in one transaction.
    func createOIDCGrant(_ grant: OIDCGrant, code: OIDCCodeRecord) async throws
    /// Spends a code of `clientID` once; a second time revokes its grant (`reused`).
    func redeemOIDCCode(hash: String, clientID: String, now: Date) async throws -> OIDCRedemption
    func storeOIDCTokens(_ tokens: [OIDCTokenRecord]) async throws
    /// Spends a refresh token of `clientID` once and stores its successors in the same transaction (none, and
    /// `unknown`, when `successors` gives nil: the grant is over); a second use revokes the grant (`reused`).
    func rotateOIDCRefreshToken(
        hash: String,
        clientID: String,
        now: Date,
        successors: @escaping @Sendable (OIDCGrant) -> [OIDCTokenRecord]?
    ) async throws -> OIDCRedemption
    /// The live token's record and grant (unexpired, grant not revoked).
    func oidcToken(hash: String, now: Date) async throws -> (OIDCTokenRecord, OIDCGrant)?
    /// Revokes the token's grant when the token is `clientID`'s (RFC 7009: a refresh token's family, an access
    /// token's grant). False when unknown.
    func revokeOIDCToken(hash: String, clientID: String, now: Date) async throws -> Bool
    /// Revokes every grant of the account (its sessions ended), returning them for back-channel logout.
    func revokeOIDCGrants(accountID: String, now: Date) async throws -> [OIDCGrant]
    /// Revokes the account's grants made in one browser's provider session (it signed out through RP-initiated
    /// logout): under `sessionID`, or under the session name (`OIDCService.sessionID`) of any session of the
    /// binding `bindingID` (a grant made before the browser's session was bound is filed under its own name).
    /// Returns them for back-channel logout.
    func revokeOIDCGrants(
        accountID: String,
        sessionID: String,
        bindingID: String?,
        now: Date
    ) async throws
        -> [OIDCGrant]
    /// Revokes every grant to the client (an administrator changed what it may have).
    func revokeOIDCGrants(clientID: String, now: Date) async throws
    func purgeOIDC(now: Date) async throws
}
