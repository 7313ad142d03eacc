import Foundation

// The OpenID Connect provider's wire types (docs/PROTOCOL.md §5). The endpoints under /oauth2 and
// /.well-known speak the specs' own field names (snake_case); the web client's API under /v1/oidc speaks
// this API's (camelCase).

/// The token endpoint's answer (RFC 6749 §5.1, OpenID Connect Core §3.1.3.3).
public struct OIDCTokenResponse: Codable, Equatable, Sendable {
    public var access_token: String
    public var token_type: String
    public var expires_in: Int
    public var id_token: String?
    public var refresh_token: String?
    public var scope: String
    public init(
        access_token: String,
        token_type: String = "Bearer",
        expires_in: Int,
        id_token: String?,
        refresh_token: String?,
        scope: String
    ) {
        self.access_token = access_token
        self.token_type = token_type
        self.expires_in = expires_in
        self.id_token = id_token
        self.refresh_token = refresh_token
        self.scope = scope
    }
}

/// An OAuth error answer (RFC 6749 §5.2).
public struct OIDCErrorResponse: Codable, Equatable, Sendable {
    public var error: String
    public var error_description: String
    public init(error: String, error_description: String) {
        self.error = error
        self.error_description = error_description
    }
}

/// `POST /v1/oidc/authorizations`: the web client passes on the authorization request its page was opened
/// with (the query's parameters, in order), with the browser's session if it has one, and the person's
/// answer on the consent screen once given.
public struct OIDCAuthorizationRequest: Codable, Sendable {
    /// Each parameter as a [name, value] pair, as the query gave them.
    public var parameters: [[String]]
    public var consent: Bool?
    /// The `since` of the sign-in the provider asked for (`OIDCAuthorizationAnswer.since`), once it is done.
    public var signedInSince: Date?
    public init(parameters: [[String]], consent: Bool? = nil, signedInSince: Date? = nil) {
        self.parameters = parameters
        self.consent = consent
        self.signedInSince = signedInSince
    }
}

/// What the page does next with an authorization request.
public struct OIDCAuthorizationAnswer: Codable, Equatable, Sendable {
    public enum Action: String, Codable, Sendable {
        /// Go to `location`: the client's redirect URI with a code, or with an error.
        case redirect
        /// Sign in (`reason` login), sign in again (reauthenticate) or step up to `need`, then ask again.
        case signIn = "sign-in"
        /// Show the consent screen for `client` and `scope`, then ask again with the answer.
        case consent
        /// Show `error` and `errorDescription` here: nothing is sent to the client.
        case error
    }
    public var action: Action
    public var location: String?
    public var reason: String?
    public var need: String?
    /// When the provider asked for the sign-in: sent back as `signedInSince` once it is done.
    public var since: Date?
    public var clientId: String?
    public var clientName: String?
    public var scope: [String]?
    /// With `consent`: the request also pairs a new authenticator (docs/PROTOCOL.md §6.11), whose key has this
    /// fingerprint; the page says so, and asks every time.
    public var pairingFingerprint: String?
    public var error: String?
    public var errorDescription: String?
    public init(
        action: Action,
        location: String? = nil,
        reason: String? = nil,
        need: String? = nil,
        since: Date? = nil,
        clientId: String? = nil,
        clientName: String? = nil,
        scope: [String]? = nil,
        pairingFingerprint: String? = nil,
        error: String? = nil,
        errorDescription: String? = nil
    ) {
        self.action = action
        self.location = location
        self.reason = reason
        self.need = need
        self.since = since
        self.clientId = clientId
        self.clientName = clientName
        self.scope = scope
        self.pairingFingerprint = pairingFingerprint
        self.error = error
        self.errorDescription = errorDescription
    }
}

/// `POST /v1/oidc/logouts`: the logout request the page at `/oauth2/logout` was opened with (its query's
/// `[name, value]` pairs), and whether the person chose to sign out of Countersign too (docs/PROTOCOL.md §6.9).
public struct OIDCLogoutRequest: Codable, Sendable {
    public var parameters: [[String]]
    public var signOut: Bool?
    public init(parameters: [[String]], signOut: Bool? = nil) {
        self.parameters = parameters
        self.signOut = signOut
    }
}

/// What the logout page does next.
public struct OIDCLogoutAnswer: Codable, Equatable, Sendable {
    public enum Action: String, Codable, Sendable {
        /// Ask whether to sign out of Countersign too (`otherAccount`: the application signed out another
        /// account than the one signed in here).
        case confirm
        /// This browser's provider session ended: sign the page out, then go to `location` if there is one.
        case signedOut = "signed-out"
        /// Show `error` and `errorDescription` here: nothing is redirected.
        case error
    }
    public var action: Action
    public var location: String?
    public var clientName: String?
    public var otherAccount: Bool?
    public var error: String?
    public var errorDescription: String?
    public init(
        action: Action,
        location: String? = nil,
        clientName: String? = nil,
        otherAccount: Bool? = nil,
        error: String? = nil,
        errorDescription: String? = nil
    ) {
        self.action = action
        self.location = location
        self.clientName = clientName
        self.otherAccount = otherAccount
        self.error = error
        self.errorDescription = errorDescription
    }
}

/// An application the account allowed on the consent screen (`GET /v1/me/connected-apps`).
public struct ConnectedApp: Codable, Equatable, Sendable {
    public var clientId: String
    public var name: String
    /// What it may receive (the scopes allowed).
    public var scope: [String]
    public var connectedAt: Date
    public init(clientId: String, name: String, scope: [String], connectedAt: Date) {
        self.clientId = clientId
        self.name = name
        self.scope = scope
        self.connectedAt = connectedAt
    }
}

public struct ConnectedAppList: Codable, Equatable, Sendable {
    public var apps: [ConnectedApp]
    public init(apps: [ConnectedApp]) { self.apps = apps }
}
