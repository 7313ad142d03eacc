import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import JWTKit

/// The OpenID Connect provider (docs/PROTOCOL.md §6): the authorization code flow with PKCE over the web
/// client's own session, tokens, userinfo, revocation and introspection. Its clock and randomness are given.
public struct OIDCService: Sendable {
    /// What an authorization request came to.
    public enum Authorization: Equatable, Sendable {
        /// Back to the client: a code, or an error for a redirect URI validated for the client.
        case redirect(String)
        /// On the provider's own page, redirected nowhere: the client or its redirect URI is not known to be good.
        case shown(OIDCError)
        /// The browser must sign in (`login`), re-authenticate (`login` for prompt=login or max_age) or step up
        /// to `need`, then ask again.
        case signIn(reason: SignInReason, client: OIDCClient, since: Date)
        /// The person must allow the client `scope` (the consent screen), then ask again with their answer.
        /// `pairing`: the fingerprint of the authenticator key the request would also pair (§6.11).
        case consent(client: OIDCClient, scope: [String], pairing: String? = nil)
    }
    public enum SignInReason: String, Sendable {
        case login
        case reauthenticate
        case stepUp = "step-up"
    }

    static let codeLifetime: TimeInterval = 60
    static let accessTokenLifetime: TimeInterval = 600
    static let idTokenLifetime: TimeInterval = 600
    static let refreshTokenLifetime: TimeInterval = 30 * 86_400
    /// How long a grant lasts however often its refresh token is used: then the person signs in to the app again.
    static let grantLifetime: TimeInterval = 90 * 86_400
    /// Bounds on what a request may make the server keep or repeat.
    static let maxParameters = 50
    static let maxValueLength = 2_000
    static let maxEchoedLength = 512
    /// How long after the provider asked for a sign-in (`since`) the page may come back with it.
    static let signInWindow: TimeInterval = 600

    let store: any OIDCStore
    let accounts: any AccountStore
    let audit: AuditLog
    let keys: OIDCKeyRing
    /// The issuer: the server's public URL exactly (no trailing slash); nil when none is set (provider off).
    let issuer: String?
    let clock: any WallClock
    let random: any RandomSource
    let pairwiseKey: SymmetricKey
    let pairing: PairingGrantOpener

    // MARK: Authorization (OpenID Connect Core §3.1.2)

    /// Answers an authorization request (`parameters` as sent, in order: a repeated one is refused) for the
    /// browser's session `auth` (nil: not signed in). `consent`: the person's answer on the consent screen.
    /// `signedInSince`: the `since` of the sign-in this provider asked for, once the page has done it; a
    /// `prompt=login` is met by a session authenticated at or after it (and within ten minutes of it).
    public func authorize(
        _ parameters: [(String, String)],
        auth: Authenticated?,
        consent: Bool? = nil,
        signedInSince: Date? = nil,
        origin: RequestOrigin,
        stillSignedIn: (@Sendable () async -> Bool)? = nil
    ) async throws -> Authorization {
        guard let issuer else { return .shown(OIDCError(.serverError, Self.offWords)) }
        let p: [String: String]
        switch Self.requestParameters(parameters) {
        case .success(let parsed): p = parsed
        case .failure(let error): return .shown(error)
        }
        guard let clientID = p["client_id"], !clientID.isEmpty else {
            return .shown(OIDCError(.invalidRequest, "client_id is missing"))
        }
        guard let client = try await store.oidcClient(id: clientID) else {
            return .shown(OIDCError(.invalidClient, "there is no client \(clientID.debugDescription) on this server"))
        }
        guard let requested = p["redirect_uri"] else {
            return .shown(OIDCError(.invalidRequest, "redirect_uri is missing: OpenID Connect requires it"))
        }
        guard let registered = client.redirectURI(requested) else {
            return .shown(
                OIDCError(
                    .invalidRequest,
                    "redirect_uri \(requested.debugDescription) is not one registered for \(client.name); nothing was sent to it"
                )
            )
        }
        guard (p["state"]?.utf8.count ?? 0) <= Self.maxEchoedLength else {
            return .shown(OIDCError(.invalidRequest, "state is longer than \(Self.maxEchoedLength) bytes"))
        }
        let state = p["state"]
        let loopbackNative = client.isPublic && registered.isLoopback
        func fail(_ code: OIDCError.Code, _ words: String) async throws -> Authorization {
            if let auth { try await audit.record(auth.account.id, .oidcAuthorize, .oidc(code.rawValue), origin) }
            return .redirect(
                Self.redirect(
                    requested,
                    ["error": code.rawValue, "error_description": words, "state": state, "iss": issuer]
                )
            )
        }
        if (p["nonce"]?.utf8.count ?? 0) > Self.maxEchoedLength {
            return try await fail(.invalidRequest, "nonce is longer than \(Self.maxEchoedLength) bytes")
        }
        if p["request"] != nil { return try await fail(.requestNotSupported, "request objects are not supported") }
        if p["request_uri"] != nil {
            return try await fail(.requestURINotSupported, "request_uri is not supported")
        }
        guard p["response_type"] == "code" else {
            return try await fail(
                .unsupportedResponseType,
                "response_type must be code: this provider serves the authorization code flow only"
            )
        }
        if let mode = p["response_mode"], mode != "query" {
            return try await fail(.invalidRequest, "response_mode must be query")
        }
        let scope = OIDCScope.split(p["scope"] ?? "")
        guard scope.contains(OIDCScope.openid) else {
            return try await fail(.invalidScope, "scope must include openid")
        }
        let granted = scope.filter(OIDCScope.supported.contains)
        let challenge = p["code_challenge"]
        switch (challenge, p["code_challenge_method"]) {
        case (nil, nil):
            if client.isPublic {
                return try await fail(.invalidRequest, "a public client must send a PKCE code_challenge (S256)")
            }
            // RFC 9700 §2.1.1: a code must be bound to the browser that asked, by PKCE or by the nonce.
            if p["nonce"] == nil {
                return try await fail(.invalidRequest, "send a PKCE code_challenge (S256), or a nonce")
            }
        case (.some(let c), "S256"):
            guard Self.isPKCEValue(c) else {
                return try await fail(.invalidRequest, "code_challenge must be 43 to 128 characters of base64url")
            }
        case (.some, nil), (.some, "plain"):
            return try await fail(.invalidRequest, "code_challenge_method must be S256; plain is refused")
        default:
            return try await fail(.invalidRequest, "code_challenge_method must be S256, with a code_challenge")
        }
        let prompts = Set(OIDCScope.split(p["prompt"] ?? ""))
        guard prompts.isSubset(of: ["none", "login", "consent", "select_account"]),
            !(prompts.contains("none") && prompts.count > 1)
        else {
            return try await fail(.invalidRequest, "prompt is none alone, or any of login, consent and select_account")
        }
        let maxAge: TimeInterval?
        if let text = p["max_age"] {
            guard let seconds = Int(text), seconds >= 0 else {
                return try await fail(.invalidRequest, "max_age is a number of seconds")
            }
            maxAge = TimeInterval(seconds)
        } else {
            maxAge = nil
        }
        let none = prompts.contains("none")
        let now = clock.now()
        // id_token_hint (Core §3.1.2.1): an ID token this provider issued to this client (expired ones too); with
        // prompt=none it must name the account signed in here.
        // A hint that does not verify (another provider's, another client's, a key no longer published) is not used;
        // only prompt=none, which relies on it, is refused.
        var hintSubject: String?
        if let text = p["id_token_hint"] {
            if let token = try? await keys.verify(text, as: IDToken.self), token.iss == issuer, token.aud == client.id {
                hintSubject = token.sub
            } else if none {
                return try await fail(
                    .invalidRequest,
                    "id_token_hint is not an ID token this provider issued to \(client.name)"
                )
            }
        }
        var pairingPayload: CheckedPayload?
        if let text = p["mobilePayload"] {
            guard client.pairing else {
                return try await fail(
                    .unauthorizedClient,
                    "\(client.name) may not pair authenticators: an administrator allows it with admin oidc-client update \(client.id) --pairing yes"
                )
            }
            // A pairing is always confirmed on the provider's page.
            if none {
                return try await fail(
                    .interactionRequired,
                    "pairing an authenticator is confirmed on the page: no prompt=none"
                )
            }
            switch Self.checkPayload(text, issuer: issuer, clientID: client.id, now: now) {
            case .success(let checked): pairingPayload = checked
            case .failure(let error): return try await fail(error.code, error.description)
            }
        }
        // The person declined on the page (Deny on the consent screen, or Cancel while signing in or stepping up).
        if consent == false { return try await fail(.accessDenied, "the person did not allow \(client.name)") }
        guard let auth else {
            return none
                ? try await fail(.loginRequired, "nobody is signed in to Countersign in this browser")
                : .signIn(reason: .login, client: client, since: now)
        }
        if none, let hintSubject, hintSubject != subject(client, auth.account.id) {
            return try await fail(.loginRequired, "the account signed in here is not the one id_token_hint names")
        }
        let session = auth.session
        let age = now.timeIntervalSince(session.authenticatedAt)
        // prompt=login: a sign-in made after this provider asked for it, not merely a recent one.
        let loggedInAgain =
            signedInSince.map {
                now.timeIntervalSince($0) <= Self.signInWindow && session.authenticatedAt >= $0
            } == true
        // Pairing an authenticator changes the account's second factors: as recent a sign-in as a pairing key needs.
        let pairingTooOld =
            pairingPayload != nil
            && !SessionService.isRecentlyAuthenticated(auth, secondFactorChange: true, now: now) && !loggedInAgain
        if prompts.contains("login") && !loggedInAgain || maxAge.map({ age > $0 }) == true || pairingTooOld {
            return none
                ? try await fail(
                    .loginRequired,
                    pairingTooOld
                        ? "a pairing needs a sign-in within ten minutes" : "the sign-in is older than max_age allows"
                )
                : .signIn(reason: .reauthenticate, client: client, since: now)
        }
        // The app learns no name: only that this account may not use it.
        if !client.allowedUsers.isEmpty && !client.allowedUsers.contains(auth.account.username) {
            return try await fail(.accessDenied, "this account may not use the application")
        }
        if !Self.meets(session.methods, client.policy) {
            return none
                ? try await fail(
                    .interactionRequired,
                    "\(client.name) needs a stronger sign-in (\(client.policy.rawValue))"
                )
                : .signIn(reason: .stepUp, client: client, since: now)
        }
        // A native app on a loopback port is whoever listens there first (RFC 8252 §8.6): the person confirms
        // each time, whatever was allowed before.
        if !client.firstParty || loopbackNative || pairingPayload != nil {
            let remembered = try await store.oidcConsent(accountID: auth.account.id, clientID: client.id) ?? []
            let covered =
                Set(granted).isSubset(of: remembered) && !prompts.contains("consent") && !loopbackNative
                && pairingPayload == nil
            switch consent {
            case false?:
                return try await fail(.accessDenied, "the person did not allow \(client.name)")  // (declined above)
            case true?:
                try await store.setOIDCConsent(
                    accountID: auth.account.id,
                    clientID: client.id,
                    scope: Array(Set(remembered + granted)),
                    at: now
                )
                try await audit.record(auth.account.id, .oidcConsent, .allowed, origin)
            case nil where !covered:
                return none
                    ? try await fail(.consentRequired, "the person has not allowed \(client.name) yet")
                    : .consent(client: client, scope: granted, pairing: pairingPayload?.key.fingerprint.description)
            case nil: break
            }
        }
        let code = "cso_c_" + Base64URL(random.bytes(32)).text
        var grant = OIDCGrant(
            id: "og_" + Base64URL(random.bytes(18)).text,
            clientID: client.id,
            accountID: auth.account.id,
            scope: granted,
            sessionID: Self.sessionID(session),
            // A QR sign-in (the authenticator alone) counts as never fully authenticated for re-authentication;
            // for the app, it signed in when the session began.
            authTime: session.authenticatedAt == SessionService.neverAuthenticated
                ? session.createdAt : session.authenticatedAt,
            methods: session.methods,
            nonce: p["nonce"],
            createdAt: now
        )
        if let checked = pairingPayload {
            // Checked again: signing in may have taken longer than the payload lives. The grant opens with the code.
            if case .failure(let error) = Self.checkPayload(
                checked.payload.text,
                issuer: issuer,
                clientID: client.id,
                now: now
            ) {
                return try await fail(error.code, error.description)
            }
            grant.pairingPayload = Base64URL(Array(SHA256.hash(data: Array(checked.payload.text.utf8)))).text
            grant.pairingKey = Base64URL(Array(SHA256.hash(data: checked.key.spkiDER))).text
        }
        try await store.createOIDCGrant(
            grant,
            code: OIDCCodeRecord(
                codeHash: TokenHash.hex(code),
                grantID: grant.id,
                redirectURI: requested,
                codeChallenge: challenge,
                expiresAt: now.addingTimeInterval(Self.codeLifetime)
            )
        )
        // A sign-out of this browser revokes its grants after it ends the session: a grant stored after that
        // revocation looked is caught here, since the session is then already gone.
        if let stillSignedIn, !(await stillSignedIn()) {
            try await store.revokeOIDCGrant(id: grant.id, now: now)
            return try await fail(.loginRequired, "this browser signed out while the application was asking")
        }
        try await audit.record(auth.account.id, .oidcAuthorize, .success, origin)
        return .redirect(Self.redirect(requested, ["code": code, "state": state, "iss": issuer]))
    }

    static let offWords =
        "this server is no OpenID Connect provider until its public URL is set (COUNTERSIGN_PUBLIC_URL): the issuer must be exact"

    /// Whether a session authenticated by `methods` meets `policy`.
    /// A request's parameters by name, within the size bounds, none given twice; one sent without a value is
    /// treated as omitted (RFC 6749 §3.1).
    static func requestParameters(_ parameters: [(String, String)]) -> Result<[String: String], OIDCError> {
        guard parameters.count <= Self.maxParameters,
            parameters.allSatisfy({ $0.0.utf8.count <= 100 && $0.1.utf8.count <= Self.maxValueLength })
        else {
            return .failure(
                OIDCError(
                    .invalidRequest,
                    "the request is too large: at most \(Self.maxParameters) parameters of 2,000 bytes"
                )
            )
        }
        var p: [String: String] = [:]
        for (name, value) in parameters {
            if p[name] != nil {
                return .failure(OIDCError(.invalidRequest, "the parameter \(name) is given more than once"))
            }
            if !value.isEmpty { p[name] = value }
        }
        return .success(p)
    }

    static func meets(_ methods: [String], _ policy: OIDCClient.Policy) -> Bool {
        switch policy {
        case .password: true
        case .mfa: SessionMethods.isMultiFactor(methods)
        case .phishingResistant: SessionMethods.isPhishingResistant(methods)
        }
    }

    /// The provider session's ID (`sid`): the browser's binding when it has one (it outlives reloads), else
    /// a name for the session itself.
    static func sessionID(_ session: SessionRecord) -> String {
        session.bindingID ?? "s_" + String(session.tokenHash.prefix(24))
    }

    static func redirect(_ uri: String, _ parameters: [String: String?]) -> String {
        var components = URLComponents(string: uri) ?? URLComponents()
        var items = components.queryItems ?? []
        for name in ["code", "error", "error_description", "state", "iss"] {
            if let value = parameters[name] ?? nil { items.append(URLQueryItem(name: name, value: value)) }
        }
        // URLQueryItem leaves + and the like as they are; a strict form (RFC 3986 unreserved only) for values.
        components.percentEncodedQuery = items.map {
            "\(Self.formEncoded($0.name))=\(Self.formEncoded($0.value ?? ""))"
        }.joined(separator: "&")
        return components.string ?? uri
    }

    static func formEncoded(_ text: String) -> String {
        let unreserved = CharacterSet(
            charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
        )
        return text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    static func isPKCEValue(_ text: String) -> Bool {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return (43...128).contains(text.count) && text.allSatisfy(allowed.contains)
    }

    // MARK: Tokens (RFC 6749 §3.2, §4.1.3, §6)

    /// How a client authenticated at the token endpoint (RFC 6749 §2.3).
    public struct ClientCredentials: Sendable {
        public var basic: (id: String, secret: String)?
        public var form: [String: String]
        public init(basic: (id: String, secret: String)?, form: [String: String]) {
            self.basic = basic
            self.form = form
        }
    }

    public typealias TokenResponse = OIDCTokenResponse

    /// The client the request authenticated, or `invalid_client`.
    func client(_ credentials: ClientCredentials) async throws -> OIDCClient {
        let form = credentials.form
        if credentials.basic != nil && form["client_secret"] != nil {
            throw OIDCError(.invalidRequest, "authenticate the client one way only: Basic or client_secret, not both")
        }
        let id = credentials.basic?.id ?? form["client_id"] ?? ""
        let secret = credentials.basic?.secret ?? form["client_secret"]
        if let basic = credentials.basic, let named = form["client_id"], named != basic.id {
            throw OIDCError(.invalidRequest, "client_id in the body is not the one authenticated")
        }
        guard let client = try await store.oidcClient(id: id) else {
            throw OIDCError(.invalidClient, "unknown client or wrong secret")
        }
        switch (client.secretHash, secret) {
        case (nil, nil): return client
        case (let stored?, let given?):
            let hash = TokenHash.hex(given)
            guard ConstantTime.equal(Array(hash.utf8), Array(stored.utf8)) else {
                throw OIDCError(.invalidClient, "unknown client or wrong secret")
            }
            return client
        case (nil, _?):
            throw OIDCError(.invalidClient, "\(client.id) is a public client: it has no secret to send")
        case (_?, nil):
            throw OIDCError(.invalidClient, "\(client.id) is confidential: authenticate with its secret")
        }
    }

    /// The token endpoint: a code or a refresh token exchanged.
    public func token(_ credentials: ClientCredentials, origin: RequestOrigin) async throws -> TokenResponse {
        guard issuer != nil else { throw OIDCError(.serverError, Self.offWords) }
        let client = try await client(credentials)
        let form = credentials.form
        let now = clock.now()
        switch form["grant_type"] {
        case "authorization_code":
            guard let code = form["code"] else { throw OIDCError(.invalidRequest, "code is missing") }
            switch try await store.redeemOIDCCode(hash: TokenHash.hex(code), clientID: client.id, now: now) {
            case .unknown:
                throw OIDCError(.invalidGrant, "the code is unknown, expired, or not this client's")
            case .reused(let grant):
                if let grant { try await audit.record(grant.accountID, .oidcToken, .oidc("code-reused"), origin) }
                throw OIDCError(.invalidGrant, "the code was used before: every token it gave is revoked")
            case .redeemed(let grant, let record?):
                guard form["redirect_uri"] == record.redirectURI else {
                    throw OIDCError(.invalidGrant, "redirect_uri is not the one the code was issued for")
                }
                switch (record.codeChallenge, form["code_verifier"]) {
                case (nil, nil): break
                case (nil, _?):
                    throw OIDCError(.invalidGrant, "a code_verifier was sent for a code issued without a challenge")
                case (_?, nil):
                    throw OIDCError(.invalidGrant, "code_verifier is missing: the code was issued with PKCE")
                case (let challenge?, let verifier?):
                    let computed = Base64URL(Array(SHA256.hash(data: Array(verifier.utf8)))).text
                    guard Self.isPKCEValue(verifier), ConstantTime.equal(Array(computed.utf8), Array(challenge.utf8))
                    else { throw OIDCError(.invalidGrant, "code_verifier does not match the code_challenge") }
                }
                try await openPairing(grant, origin: origin)
                let response = try await issue(client, grant, now: now, idToken: true)
                try await audit.record(grant.accountID, .oidcToken, .success, origin)
                return response
            case .redeemed(_, nil): throw OIDCError(.invalidGrant, "the code is unknown")
            }
        case "refresh_token":
            guard let refresh = form["refresh_token"] else {
                throw OIDCError(.invalidRequest, "refresh_token is missing")
            }
            let tokens = TokenSet(random: random, now: now, grantID: "")
            let offlineAllowed = client.offlineAccess
            let outcome = try await store.rotateOIDCRefreshToken(
                hash: TokenHash.hex(refresh),
                clientID: client.id,
                now: now
            ) { grant in
                // None after the grant's end, nor once the client may no longer have offline access.
                let end = grant.createdAt.addingTimeInterval(Self.grantLifetime)
                guard now < end, offlineAllowed || grant.scope.contains(OIDCScope.offlineAccess) else { return nil }
                return tokens.records(grantID: grant.id, refresh: true, until: end)
            }
            switch outcome {
            case .unknown: throw OIDCError(.invalidGrant, "the refresh token is unknown, expired or revoked")
            case .reused(let grant):
                if let grant { try await audit.record(grant.accountID, .oidcToken, .oidc("refresh-reused"), origin) }
                throw OIDCError(.invalidGrant, "the refresh token was used before: its whole family is revoked")
            case .redeemed(let grant, _):
                // The client's terms are checked again at each refresh: allowed users, a lock (no session left).
                guard let account = try await accounts.account(id: grant.accountID),
                    client.allowedUsers.isEmpty || client.allowedUsers.contains(account.username)
                else {
                    _ = try await store.revokeOIDCToken(
                        hash: TokenHash.hex(tokens.refresh),
                        clientID: client.id,
                        now: now
                    )
                    throw OIDCError(.invalidGrant, "the refresh token is no longer valid for this account")
                }
                return TokenResponse(
                    access_token: tokens.access,
                    expires_in: Int(Self.accessTokenLifetime),
                    id_token: try await idToken(client, grant, now: now),
                    refresh_token: tokens.refresh,
                    scope: OIDCScope.text(grant.scope)
                )
            }
        case nil: throw OIDCError(.invalidRequest, "grant_type is missing")
        case let other?:
            throw OIDCError(
                .unsupportedGrantType,
                "grant_type \(other.debugDescription) is not supported: authorization_code or refresh_token"
            )
        }
    }

    /// A fresh access token (and refresh token) pair, made before they are stored.
    struct TokenSet: Sendable {
        let access: String
        let refresh: String
        let now: Date
        init(random: any RandomSource, now: Date, grantID: String) {
            access = "cso_at_" + Base64URL(random.bytes(32)).text
            refresh = "cso_rt_" + Base64URL(random.bytes(32)).text
            self.now = now
        }
        func records(grantID: String, refresh withRefresh: Bool, until end: Date = .distantFuture) -> [OIDCTokenRecord]
        {
            var records = [
                OIDCTokenRecord(
                    tokenHash: TokenHash.hex(access),
                    grantID: grantID,
                    kind: .access,
                    expiresAt: now.addingTimeInterval(OIDCService.accessTokenLifetime),
                    createdAt: now
                )
            ]
            if withRefresh {
                records.append(
                    OIDCTokenRecord(
                        tokenHash: TokenHash.hex(refresh),
                        grantID: grantID,
                        kind: .refresh,
                        expiresAt: min(now.addingTimeInterval(OIDCService.refreshTokenLifetime), end),
                        createdAt: now
                    )
                )
            }
            return records
        }
    }

    private func issue(_ client: OIDCClient, _ grant: OIDCGrant, now: Date, idToken: Bool) async throws -> TokenResponse
    {
        let offline = client.offlineAccess || grant.scope.contains(OIDCScope.offlineAccess)
        let tokens = TokenSet(random: random, now: now, grantID: grant.id)
        try await store.storeOIDCTokens(tokens.records(grantID: grant.id, refresh: offline))
        return TokenResponse(
            access_token: tokens.access,
            expires_in: Int(Self.accessTokenLifetime),
            id_token: idToken ? try await self.idToken(client, grant, now: now, pairing: true) : nil,
            refresh_token: offline ? tokens.refresh : nil,
            scope: OIDCScope.text(grant.scope)
        )
    }

    // MARK: ID tokens and claims (OpenID Connect Core §2, §5.1)

    struct IDToken: JWTPayload {
        var iss: String
        var sub: String
        var aud: String
        var azp: String
        var exp: Int
        var iat: Int
        var auth_time: Int
        var nonce: String?
        var sid: String
        var acr: String
        var amr: [String]
        var name: String?
        var given_name: String?
        var family_name: String?
        var preferred_username: String?
        var pairing: OIDCPairingClaim?
        enum CodingKeys: String, CodingKey {
            case iss, sub, aud, azp, exp, iat, auth_time, nonce, sid, acr, amr, name, given_name, family_name
            case preferred_username
            case pairing = "urn:countersign:pairing"
        }
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    /// `pairing`: the code exchange's ID token, the only one to carry a pairing grant (§6.11).
    func idToken(_ client: OIDCClient, _ grant: OIDCGrant, now: Date, pairing: Bool = false) async throws -> String {
        guard let issuer, let account = try await accounts.account(id: grant.accountID) else {
            throw OIDCError(.invalidGrant, "the account is gone")
        }
        let profile = grant.scope.contains(OIDCScope.profile)
        let token = IDToken(
            iss: issuer,
            sub: subject(client, account.id),
            aud: client.id,
            azp: client.id,
            exp: Int(now.addingTimeInterval(Self.idTokenLifetime).timeIntervalSince1970),
            iat: Int(now.timeIntervalSince1970),
            auth_time: Int(grant.authTime.timeIntervalSince1970),
            nonce: grant.nonce,
            sid: sid(client, grant.sessionID),
            acr: Self.acr(grant.methods),
            amr: grant.methods,
            name: profile ? "\(account.name) \(account.lastname)" : nil,
            given_name: profile ? account.name : nil,
            family_name: profile ? account.lastname : nil,
            preferred_username: profile ? account.username : nil,
            pairing: pairing ? pairingClaim(grant, username: account.username) : nil
        )
        return try await keys.sign(token, algorithm: client.idTokenAlgorithm)
    }

    /// The strongest policy the methods meet, as an `acr` value (docs/PROTOCOL.md §6.6).
    static func acr(_ methods: [String]) -> String {
        let policy: OIDCClient.Policy =
            meets(methods, .phishingResistant) ? .phishingResistant : meets(methods, .mfa) ? .mfa : .password
        return "urn:countersign:acr:" + policy.rawValue
    }

    /// `sid` as one client sees it: two clients cannot join their users on it, nor learn the binding's ID.
    func sid(_ client: OIDCClient, _ sessionID: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array("sid\u{0}\(client.id)\u{0}\(sessionID)".utf8),
            using: pairwiseKey
        )
        return Base64URL(Array(Data(mac).prefix(18))).text
    }

    /// `sub`: the account's opaque ID, or for a pairwise client an identifier only that client sees.
    func subject(_ client: OIDCClient, _ accountID: String) -> String {
        guard client.pairwise else { return accountID }
        let mac = HMAC<SHA256>.authenticationCode(for: Array("\(client.id)\u{0}\(accountID)".utf8), using: pairwiseKey)
        return "pw_" + Base64URL(Array(Data(mac).prefix(24))).text
    }

    /// The userinfo claims of an access token (OpenID Connect Core §5.3).
    public func userinfo(accessToken: String?) async throws -> [String: String] {
        guard let accessToken,
            let (token, grant) = try await store.oidcToken(hash: TokenHash.hex(accessToken), now: clock.now()),
            token.kind == .access, let client = try await store.oidcClient(id: grant.clientID),
            let account = try await accounts.account(id: grant.accountID)
        else { throw OIDCError(.invalidToken, "the access token is unknown, expired or revoked") }
        var claims = ["sub": subject(client, account.id)]
        if grant.scope.contains(OIDCScope.profile) {
            claims["name"] = "\(account.name) \(account.lastname)"
            claims["given_name"] = account.name
            claims["family_name"] = account.lastname
            claims["preferred_username"] = account.username
        }
        return claims
    }

    // MARK: Revocation (RFC 7009) and introspection (RFC 7662)

    public func revoke(_ credentials: ClientCredentials, origin: RequestOrigin) async throws {
        let client = try await client(credentials)
        guard let token = credentials.form["token"] else { throw OIDCError(.invalidRequest, "token is missing") }
        // An unknown token, or another client's, is answered the same: 200, nothing revoked (RFC 7009 §2.2).
        _ = try await store.revokeOIDCToken(hash: TokenHash.hex(token), clientID: client.id, now: clock.now())
    }

    /// RFC 7662 §2.2: `active` alone when the token is not live (or not the asking client's).
    public struct Introspection: Encodable, Sendable {
        var active: Bool
        var client_id: String?
        var scope: String?
        var sub: String?
        var exp: Int?
        var iat: Int?
        var iss: String?
        var token_type: String?
    }

    public func introspect(_ credentials: ClientCredentials) async throws -> Introspection {
        let client = try await client(credentials)
        guard !client.isPublic else {
            throw OIDCError(.invalidClient, "introspection is for confidential clients")
        }
        guard let text = credentials.form["token"] else { throw OIDCError(.invalidRequest, "token is missing") }
        guard let (token, grant) = try await store.oidcToken(hash: TokenHash.hex(text), now: clock.now()),
            grant.clientID == client.id, let issuer
        else { return Introspection(active: false) }
        return Introspection(
            active: true,
            client_id: client.id,
            scope: OIDCScope.text(grant.scope),
            sub: subject(client, grant.accountID),
            exp: Int(token.expiresAt.timeIntervalSince1970),
            iat: Int(token.createdAt.timeIntervalSince1970),
            iss: issuer,
            token_type: token.kind == .access ? "Bearer" : "refresh_token"
        )
    }

    // MARK: Discovery (OpenID Connect Discovery 1.0 §3) and keys

    /// The provider metadata: only what the server does.
    public struct Discovery: Encodable, Sendable {
        var issuer: String
        var authorization_endpoint: String
        var token_endpoint: String
        var userinfo_endpoint: String
        var jwks_uri: String
        var revocation_endpoint: String
        var introspection_endpoint: String
        var end_session_endpoint: String
        var response_types_supported = ["code"]
        var response_modes_supported = ["query"]
        var grant_types_supported = ["authorization_code", "refresh_token"]
        var subject_types_supported = ["public", "pairwise"]
        var id_token_signing_alg_values_supported = ["ES256", "RS256"]
        var scopes_supported = OIDCScope.supported
        var claims_supported = [
            "iss", "sub", "aud", "azp", "exp", "iat", "auth_time", "nonce", "sid", "acr", "amr", "name", "given_name",
            "family_name", "preferred_username",
        ]
        var acr_values_supported = OIDCClient.Policy.allCases.map { "urn:countersign:acr:" + $0.rawValue }
        var code_challenge_methods_supported = ["S256"]
        var token_endpoint_auth_methods_supported = ["client_secret_basic", "client_secret_post", "none"]
        var revocation_endpoint_auth_methods_supported = ["client_secret_basic", "client_secret_post", "none"]
        var introspection_endpoint_auth_methods_supported = ["client_secret_basic", "client_secret_post"]
        var prompt_values_supported = ["none", "login", "consent", "select_account"]
        var authorization_response_iss_parameter_supported = true
        var request_parameter_supported = false
        var request_uri_parameter_supported = false
        var claims_parameter_supported = false
        var backchannel_logout_supported = true
        var backchannel_logout_session_supported = true
    }

    public func discovery() throws -> Discovery {
        guard let issuer else { throw OIDCError(.serverError, Self.offWords) }
        return Discovery(
            issuer: issuer,
            authorization_endpoint: issuer + "/oauth2/authorize",
            token_endpoint: issuer + "/oauth2/token",
            userinfo_endpoint: issuer + "/oauth2/userinfo",
            jwks_uri: issuer + "/oauth2/jwks",
            revocation_endpoint: issuer + "/oauth2/revoke",
            introspection_endpoint: issuer + "/oauth2/introspect",
            end_session_endpoint: issuer + "/oauth2/logout"
        )
    }
}
