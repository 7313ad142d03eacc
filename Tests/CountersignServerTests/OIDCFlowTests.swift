import CountersignAPI
import Crypto
import Foundation
import HTTPTypes
import JWTKit
import Synchronization
import Testing

@testable import CountersignServer

/// The OpenID Connect provider end to end on both backends (docs/PROTOCOL.md §5): authorization with the web
/// client's session, consent, code + PKCE exchanged once, an ID token checked against the JWKS, userinfo,
/// refresh rotation, and what a second use of a code or a refresh token revokes.
@Suite(.closesStorage) struct OIDCFlowTests {
    static let issuer = "https://cs.example.com"
    static let redirect = "https://app.example.com/cb"
    static let verifier = String(repeating: "v", count: 20) + "-._~" + String(repeating: "K", count: 30)
    static var challenge: String { Base64URL(Array(SHA256.hash(data: Array(verifier.utf8)))).text }

    static func client(
        _ id: String,
        secret: String? = "s3cret",
        policy: OIDCClient.Policy = .password,
        firstParty: Bool = false
    ) -> OIDCClient {
        OIDCClient(
            id: id,
            name: "The \(id) app",
            secretHash: secret.map(TokenHash.hex),
            redirectURIs: [redirect, "http://127.0.0.1/native"],
            postLogoutRedirectURIs: [],
            backchannelLogoutURI: nil,
            firstParty: firstParty,
            policy: policy,
            allowedUsers: [],
            offlineAccess: false,
            idTokenAlgorithm: .es256,
            pairwise: false,
            createdAt: Date()
        )
    }

    static func parameters(_ client: String, _ extra: [String: String] = [:], pkce: Bool = true) -> [[String]] {
        var p = [
            "client_id": client, "redirect_uri": redirect, "response_type": "code",
            "scope": "openid profile offline_access", "state": "st-1", "nonce": "n-1",
        ]
        if pkce {
            p["code_challenge"] = challenge
            p["code_challenge_method"] = "S256"
        }
        for (k, v) in extra { p[k] = v }
        return p.filter { !$0.value.isEmpty }.map { [$0.key, $0.value] }
    }

    static func authorize(
        _ api: API,
        _ token: String?,
        _ parameters: [[String]],
        consent: Bool? = nil
    ) async throws
        -> OIDCAuthorizationAnswer
    {
        var body: [String: any Sendable] = ["parameters": parameters]
        if let consent { body["consent"] = consent }
        let reply = try await api.call(.post, "/v1/oidc/authorizations", json: body, token: token)
        #expect(reply.status == 200, "\(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
        return try APICoding.decoder().decode(OIDCAuthorizationAnswer.self, from: reply.body)
    }

    static func query(_ location: String?) -> [String: String] {
        let items = URLComponents(string: location ?? "")?.queryItems ?? []
        return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
    }

    static func form(
        _ api: API,
        _ path: String,
        _ fields: [String: String],
        basic: (String, String)? = nil
    ) async throws
        -> API.Reply
    {
        var headers: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
        if let (id, secret) = basic {
            headers[.authorization] = "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString()
        }
        let body = fields.map { "\(OIDCService.formEncoded($0.key))=\(OIDCService.formEncoded($0.value))" }
            .joined(separator: "&")
        return try await api.call(.post, path, raw: Data(body.utf8), headers: headers)
    }

    struct Claims: JWTPayload {
        var iss: IssuerClaim
        var sub: SubjectClaim
        var aud: AudienceClaim
        var exp: ExpirationClaim
        var nonce: String?
        var amr: [String]
        var acr: String
        var sid: String
        var auth_time: Int
        var preferred_username: String?
        func verify(using algorithm: some JWTAlgorithm) throws { try exp.verifyNotExpired() }
    }

    @Test(arguments: Backend.available)
    func aCodeBecomesTokensOnceAndTheIDTokenVerifiesAgainstTheJWKS(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.publicURL = Self.issuer }
        try await h.run { api in
            try await api.register("oidcalice")
            let token = try await api.token("oidcalice")
            #expect(try await h.storage.addOIDCClient(Self.client("app")))
            // Not allowed yet: the consent screen, naming the client and what it will get.
            let asked = try await Self.authorize(api, token, Self.parameters("app"))
            #expect(asked.action == .consent && asked.clientName == "The app app", "\(asked)")
            #expect(Set(asked.scope ?? []) == ["openid", "profile", "offline_access"])
            let allowed = try await Self.authorize(api, token, Self.parameters("app"), consent: true)
            #expect(allowed.action == .redirect)
            let back = Self.query(allowed.location)
            #expect(allowed.location?.hasPrefix(Self.redirect + "?") == true)
            #expect(back["state"] == "st-1" && back["iss"] == Self.issuer, "\(back)")
            let code = try #require(back["code"])

            let exchange: [String: String] = [
                "grant_type": "authorization_code", "code": code, "redirect_uri": Self.redirect,
                "code_verifier": Self.verifier,
            ]
            let wrongVerifier = try await Self.form(
                api,
                "/oauth2/token",
                exchange.merging(["code_verifier": Self.verifier + "x"]) { $1 },
                basic: ("app", "s3cret")
            )
            #expect(wrongVerifier.status == 400 && wrongVerifier.json["error"] as? String == "invalid_grant")
            // That attempt spent the code (the verifier is checked after): a second try is a reuse.
            let again = try await Self.authorize(api, token, Self.parameters("app"))
            #expect(again.action == .redirect, "consent remembered: \(again)")
            let code2 = try #require(Self.query(again.location)["code"])
            let wrongSecret = try await Self.form(
                api,
                "/oauth2/token",
                exchange.merging(["code": code2]) { $1 },
                basic: ("app", "nope")
            )
            #expect(wrongSecret.status == 401 && wrongSecret.json["error"] as? String == "invalid_client")
            #expect(wrongSecret.headers[.wwwAuthenticate]?.hasPrefix("Basic") == true)
            let tokens = try await Self.form(
                api,
                "/oauth2/token",
                exchange.merging(["code": code2]) { $1 },
                basic: ("app", "s3cret")
            )
            #expect(tokens.status == 200, "\(String(decoding: tokens.body, as: UTF8.self))")
            #expect(tokens.headers[.cacheControl] == "no-store")
            let answer = try JSONDecoder().decode(OIDCTokenResponse.self, from: tokens.body)
            let idToken = try #require(answer.id_token)
            let refresh = try #require(answer.refresh_token, "offline_access asked for")

            // The ID token verifies against the published keys, and says who, for whom, how and when.
            let jwks = try await api.call(.get, "/oauth2/jwks")
            let keys = try await JWTKeyCollection().add(jwksJSON: String(decoding: jwks.body, as: UTF8.self))
            let claims = try await keys.verify(idToken, as: Claims.self)
            let accountID = try await SessionBindingTests.accountID(api, token)
            #expect(claims.iss.value == Self.issuer && claims.aud.value == ["app"] && claims.sub.value == accountID)
            #expect(claims.nonce == "n-1" && claims.amr == ["pwd"] && claims.acr == "urn:countersign:acr:password")
            #expect(claims.preferred_username == "oidcalice")
            // Tampered: refused.
            var parts = idToken.split(separator: ".").map(String.init)
            parts[1] = Base64URL(Array(#"{"sub":"someone else"}"#.utf8)).text
            await #expect(throws: (any Error).self) {
                try await keys.verify(parts.joined(separator: "."), as: Claims.self)
            }

            let info = try await api.call(.get, "/oauth2/userinfo", token: answer.access_token)
            #expect(info.status == 200 && info.json["preferred_username"] as? String == "oidcalice", "\(info.json)")
            #expect(info.json["sub"] as? String == accountID)

            // Refresh: rotated; the old one used again revokes the whole family, the new access token too.
            let rotated = try await Self.form(
                api,
                "/oauth2/token",
                ["grant_type": "refresh_token", "refresh_token": refresh],
                basic: ("app", "s3cret")
            )
            #expect(rotated.status == 200, "\(String(decoding: rotated.body, as: UTF8.self))")
            let next = try JSONDecoder().decode(OIDCTokenResponse.self, from: rotated.body)
            #expect(next.refresh_token != nil && next.refresh_token != refresh)
            #expect(try await api.call(.get, "/oauth2/userinfo", token: next.access_token).status == 200)
            let reused = try await Self.form(
                api,
                "/oauth2/token",
                ["grant_type": "refresh_token", "refresh_token": refresh],
                basic: ("app", "s3cret")
            )
            #expect(reused.status == 400 && reused.json["error"] as? String == "invalid_grant")
            #expect(try await api.call(.get, "/oauth2/userinfo", token: next.access_token).status == 401)
            let afterReuse = try await Self.form(
                api,
                "/oauth2/token",
                ["grant_type": "refresh_token", "refresh_token": next.refresh_token ?? ""],
                basic: ("app", "s3cret")
            )
            #expect(afterReuse.status == 400, "the successor is revoked with its family")

            // A code exchanged, then presented again: refused, and what it gave is revoked (oidcc-codereuse).
            let third = try #require(
                Self.query(try await Self.authorize(api, token, Self.parameters("app")).location)["code"]
            )
            let first = try await Self.form(
                api,
                "/oauth2/token",
                exchange.merging(["code": third]) { $1 },
                basic: ("app", "s3cret")
            )
            let firstTokens = try JSONDecoder().decode(OIDCTokenResponse.self, from: first.body)
            h.clock.advance(30)
            let second = try await Self.form(
                api,
                "/oauth2/token",
                exchange.merging(["code": third]) { $1 },
                basic: ("app", "s3cret")
            )
            #expect(second.status == 400 && second.json["error"] as? String == "invalid_grant")
            #expect(try await api.call(.get, "/oauth2/userinfo", token: firstTokens.access_token).status == 401)
            let audit = try await api.call(.get, "/v1/me/audit?limit=50", token: token)
            let kinds = ((audit.json["events"] as? [[String: Any]]) ?? []).map {
                "\($0["kind"] ?? "") \($0["outcome"] ?? "")"
            }
            #expect(kinds.contains("oidc-token code-reused") && kinds.contains("oidc-token refresh-reused"), "\(kinds)")
            #expect(kinds.contains("oidc-consent allowed") && kinds.contains("oidc-authorize success"))
        }
    }

    @Test(arguments: Backend.available)
    func badRequestsAreShownOrRedirectedOnlyToARegisteredURI(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.publicURL = Self.issuer }
        try await h.run { api in
            try await api.register("oidcbob")
            let token = try await api.token("oidcbob")
            #expect(try await h.storage.addOIDCClient(Self.client("conf")))
            #expect(try await h.storage.addOIDCClient(Self.client("native", secret: nil)))
            #expect(try await h.storage.addOIDCClient(Self.client("strict", policy: .mfa, firstParty: true)))
            // Shown, never redirected: an unknown client, a redirect URI not registered for it.
            for (params, words) in [
                (Self.parameters("nobody"), "no client"),
                (
                    Self.parameters("conf", ["redirect_uri": "https://app.example.com.evil.com/cb"]),
                    "not one registered"
                ),
                (Self.parameters("conf", ["redirect_uri": "https://app.example.com/cb/longer"]), "not one registered"),
                (Self.parameters("conf", ["redirect_uri": ""]), "missing"),
                (Self.parameters("conf") + [["state", "twice"]], "more than once"),
            ] {
                let answer = try await Self.authorize(api, token, params)
                #expect(answer.action == .error && answer.location == nil, "\(params)")
                #expect(answer.errorDescription?.contains(words) == true, "\(answer)")
            }
            // Redirected with the spec's error, state and iss.
            for (params, error, session) in [
                (Self.parameters("conf", ["response_type": "token"]), "unsupported_response_type", true),
                (Self.parameters("conf", ["scope": "profile"]), "invalid_scope", true),
                (Self.parameters("conf", ["code_challenge_method": "plain"]), "invalid_request", true),
                (Self.parameters("native", pkce: false), "invalid_request", true),
                (Self.parameters("conf", ["request": "eyJ"]), "request_not_supported", true),
                (Self.parameters("conf", ["prompt": "none"]), "login_required", false),
                (Self.parameters("conf", ["prompt": "none"]), "consent_required", true),
                (Self.parameters("strict", ["prompt": "none"]), "interaction_required", true),
            ] {
                let answer = try await Self.authorize(api, session ? token : nil, params)
                let back = Self.query(answer.location)
                #expect(answer.action == .redirect && back["error"] == error, "\(params): \(answer)")
                #expect(back["state"] == "st-1" && back["iss"] == Self.issuer && back["code"] == nil)
            }
            // Without prompt=none: sign in, or step up to the client's policy.
            let signedOut = try await Self.authorize(api, nil, Self.parameters("conf"))
            #expect(signedOut.action == .signIn && signedOut.reason == "login")
            // Cancel on the sign-in or step-up screen: the app hears access_denied, signed in or not.
            let cancelled = try await Self.authorize(api, nil, Self.parameters("conf"), consent: false)
            #expect(Self.query(cancelled.location)["error"] == "access_denied", "\(cancelled)")
            let stepUp = try await Self.authorize(api, token, Self.parameters("strict"))
            #expect(stepUp.action == .signIn && stepUp.reason == "step-up" && stepUp.need == "mfa", "\(stepUp)")
            #expect(stepUp.clientName == "The strict app")
            // Stepped up in the same session (as a passkey's re-authentication records it): the code comes.
            try await h.services.sessions.markReauthenticated(
                tokenHash: TokenHash.hex(token),
                at: h.clock.now(),
                methods: ["hwk", "user", "mfa"]
            )
            let stepped = try await Self.authorize(api, token, Self.parameters("strict"))
            #expect(stepped.action == .redirect && Self.query(stepped.location)["code"] != nil, "\(stepped)")
            try await h.services.sessions.markReauthenticated(
                tokenHash: TokenHash.hex(token),
                at: h.clock.now(),
                methods: ["pwd"]
            )
            h.clock.advance(5)
            let old = try await Self.authorize(api, token, Self.parameters("conf", ["max_age": "1"]))
            #expect(old.action == .signIn && old.reason == "reauthenticate", "\(old)")
            let recent = try await Self.authorize(
                api,
                token,
                Self.parameters("conf", ["max_age": "10000"]),
                consent: true
            )
            #expect(recent.action == .redirect && Self.query(recent.location)["code"] != nil, "oidcc-max-age-10000")
            // prompt=login: a sign-in after the provider asked, however recent the last one (oidcc-prompt-login).
            let login = try await Self.authorize(api, token, Self.parameters("conf", ["prompt": "login"]))
            #expect(login.action == .signIn && login.reason == "reauthenticate", "prompt=login asks again")
            let since = try #require(login.since)
            let notYet = try await api.call(
                .post,
                "/v1/oidc/authorizations",
                json: [
                    "parameters": Self.parameters("conf", ["prompt": "login"]), "signedInSince": WireDate.format(since),
                ],
                token: token
            )
            #expect(try APICoding.decoder().decode(OIDCAuthorizationAnswer.self, from: notYet.body).action == .signIn)
            h.clock.advance(1)
            let reauth = try await api.call(
                .post,
                "/v1/sessions/current/reauth",
                json: ["password": "correct horse"],
                token: token
            )
            #expect(reauth.status == 200 || reauth.status == 204, "\(reauth.status) \(reauth.json)")
            let fresh = try await api.call(
                .post,
                "/v1/oidc/authorizations",
                json: [
                    "parameters": Self.parameters("conf", ["prompt": "login"]), "signedInSince": WireDate.format(since),
                ],
                token: token
            )
            let answer = try APICoding.decoder().decode(OIDCAuthorizationAnswer.self, from: fresh.body)
            #expect(answer.action == .redirect && Self.query(answer.location)["code"] != nil, "\(answer)")

            // A native (public) client: any loopback port, PKCE, no secret; a verifier is then required.
            let native = try await Self.authorize(
                api,
                token,
                Self.parameters("native", ["redirect_uri": "http://127.0.0.1:51234/native"]),
                consent: true
            )
            let code = try #require(Self.query(native.location)["code"], "\(native)")
            let noVerifier = try await Self.form(
                api,
                "/oauth2/token",
                [
                    "grant_type": "authorization_code", "code": code, "redirect_uri": "http://127.0.0.1:51234/native",
                    "client_id": "native",
                ]
            )
            #expect(noVerifier.status == 400 && noVerifier.json["error"] as? String == "invalid_grant")
            // A code issued without a challenge (a confidential client may omit PKCE): a verifier is refused.
            let plain = try await Self.authorize(api, token, Self.parameters("conf", pkce: false), consent: true)
            let plainCode = try #require(Self.query(plain.location)["code"])
            let stray = try await Self.form(
                api,
                "/oauth2/token",
                [
                    "grant_type": "authorization_code", "code": plainCode, "redirect_uri": Self.redirect,
                    "code_verifier": Self.verifier,
                ],
                basic: ("conf", "s3cret")
            )
            #expect(stray.status == 400 && stray.json["error"] as? String == "invalid_grant")
            let wrongGrant = try await Self.form(
                api,
                "/oauth2/token",
                ["grant_type": "password"],
                basic: ("conf", "s3cret")
            )
            #expect(wrongGrant.json["error"] as? String == "unsupported_grant_type")
            let both = try await Self.form(
                api,
                "/oauth2/token",
                ["grant_type": "authorization_code", "client_secret": "s3cret"],
                basic: ("conf", "s3cret")
            )
            #expect(both.json["error"] as? String == "invalid_request")
            let json = try await api.call(.post, "/oauth2/token", json: ["grant_type": "authorization_code"])
            #expect(json.status == 400 && json.json["error"] as? String == "invalid_request")
        }
    }

    /// Token with refresh for `client` (consent given), for the account session `token`.
    static func tokens(_ api: API, _ token: String, _ client: String) async throws -> OIDCTokenResponse {
        let answer = try await authorize(api, token, parameters(client), consent: true)
        let code = try #require(query(answer.location)["code"], "\(answer)")
        let reply = try await form(
            api,
            "/oauth2/token",
            [
                "grant_type": "authorization_code", "code": code, "redirect_uri": redirect, "code_verifier": verifier,
            ],
            basic: (client, "s3cret")
        )
        return try JSONDecoder().decode(OIDCTokenResponse.self, from: reply.body)
    }

    @Test(arguments: Backend.available)
    func endingsAndTheClientsTermsAreKeptAfterTheCode(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.publicURL = Self.issuer }
        try await h.run { api in
            try await api.register("oidccarol")
            let token = try await api.token("oidccarol")
            #expect(try await h.storage.addOIDCClient(Self.client("one")))
            #expect(try await h.storage.addOIDCClient(Self.client("two")))
            let one = try await Self.tokens(api, token, "one")
            let two = try await Self.tokens(api, token, "two")
            // sid differs per client for the same browser session: the apps cannot join on it.
            let keys = try await JWTKeyCollection().add(
                jwksJSON: String(decoding: try await api.call(.get, "/oauth2/jwks").body, as: UTF8.self)
            )
            let sidOne = try await keys.verify(try #require(one.id_token), as: Claims.self).sid
            let sidTwo = try await keys.verify(try #require(two.id_token), as: Claims.self).sid
            #expect(sidOne != sidTwo && !sidOne.hasPrefix("sb_") && !sidOne.hasPrefix("s_"))

            // An administrator narrows "two" to other users: what it was given ends, and it gets no more.
            var narrowed = Self.client("two")
            narrowed.allowedUsers = ["someone"]
            #expect(try await h.storage.updateOIDCClient(narrowed))
            try await h.storage.revokeOIDCGrants(clientID: "two", now: h.clock.now())
            #expect(try await api.call(.get, "/oauth2/userinfo", token: two.access_token).status == 401)
            let denied = try await Self.authorize(api, token, Self.parameters("two"), consent: true)
            let back = Self.query(denied.location)
            #expect(back["error"] == "access_denied" && back["error_description"]?.contains("oidccarol") == false)

            // Signing out everywhere ends the account's grants: the refresh token of "one" stops working.
            #expect(try await api.call(.delete, "/v1/sessions", token: token).status == 204)
            var refreshed = 0
            for _ in 0..<50 {
                refreshed = try await Self.form(
                    api,
                    "/oauth2/token",
                    ["grant_type": "refresh_token", "refresh_token": one.refresh_token ?? ""],
                    basic: ("one", "s3cret")
                ).status
                if refreshed == 400 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(refreshed == 400, "the grant outlived sign-out everywhere")
        }
    }

    @Test(arguments: Backend.available)
    func aLoopbackNativeAppIsConfirmedEachTimeAndACodeIsBoundToTheBrowser(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.publicURL = Self.issuer }
        try await h.run { api in
            try await api.register("oidcdave")
            let token = try await api.token("oidcdave")
            var native = Self.client("native", secret: nil)
            native.firstParty = true
            #expect(try await h.storage.addOIDCClient(native))
            #expect(try await h.storage.addOIDCClient(Self.client("conf")))
            let loopback = ["redirect_uri": "http://127.0.0.1:50000/native"]
            let first = try await Self.authorize(api, token, Self.parameters("native", loopback), consent: true)
            #expect(first.action == .redirect)
            // Whoever listens on a loopback port could have started it (RFC 8252 §8.6): asked again, even first party.
            let second = try await Self.authorize(api, token, Self.parameters("native", loopback))
            #expect(second.action == .consent, "\(second)")
            let silent = try await Self.authorize(
                api,
                token,
                Self.parameters("native", loopback.merging(["prompt": "none"]) { $1 })
            )
            #expect(Self.query(silent.location)["error"] == "consent_required")
            // A confidential client without PKCE must send a nonce (RFC 9700 §2.1.1).
            let unbound = try await Self.authorize(
                api,
                token,
                Self.parameters("conf", ["nonce": ""], pkce: false),
                consent: true
            )
            #expect(Self.query(unbound.location)["error"] == "invalid_request", "\(unbound)")
            // An empty parameter is one not sent: an empty prompt is no prompt.
            let empty = try await Self.authorize(
                api,
                token,
                Self.parameters("conf", ["prompt": ""]) + [["login_hint", ""]],
                consent: true
            )
            #expect(empty.action == .redirect && Self.query(empty.location)["code"] != nil, "\(empty)")
            // Too large a request is shown, not stored.
            let big = try await Self.authorize(
                api,
                token,
                Self.parameters("conf", ["state": String(repeating: "s", count: 600)])
            )
            #expect(big.action == .error, "\(big)")
        }
    }

    /// What a back-channel logout receiver got: each POST's URI and logout token, and how it answered.
    final class Receiver: Sendable {
        let posts = Mutex<[(uri: String, token: String)]>([])
        /// Answers 503 to the first post, 200 after: the sender must try again.
        func deliver(_ uri: String, _ token: String) async throws -> Int {
            posts.withLock { p in
                p.append((uri, token))
                return p.count == 1 ? 503 : 200
            }
        }
    }

    @Test(arguments: Backend.available)
    func signingOutEverywhereSendsEachClientASignedLogoutToken(_ backend: Backend) async throws {
        let receiver = Receiver()
        let h = try await Harness.make(
            backend,
            configure: { $0.publicURL = Self.issuer },
            backChannel: receiver.deliver
        )
        try await h.run { api in
            try await api.register("oidcerin")
            let token = try await api.token("oidcerin")
            var client = Self.client("logs")
            client.backchannelLogoutURI = "https://app.example.com/backchannel"
            #expect(try await h.storage.addOIDCClient(client))
            #expect(try await h.storage.addOIDCClient(Self.client("quiet")))
            let tokens = try await Self.tokens(api, token, "logs")
            _ = try await Self.tokens(api, token, "quiet")
            #expect(try await api.call(.delete, "/v1/sessions", token: token).status == 204)
            // The sign-out answered at once; the token follows, the first 503 tried again.
            for _ in 0..<200 where receiver.posts.withLock({ $0.count }) < 2 {
                try await Task.sleep(for: .milliseconds(100))
            }
            // No third post: the retry was answered 200.
            try await Task.sleep(for: .milliseconds(300))
            let posts = receiver.posts.withLock { $0 }
            #expect(posts.count == 2, "one client with a back-channel URI, one retry: \(posts.count)")
            // Each try is a token of its own (a fresh jti and exp).
            #expect(posts.count == 2 && posts[0].token != posts[1].token)
            #expect(posts.allSatisfy { $0.uri == "https://app.example.com/backchannel" })
            let keys = try await JWTKeyCollection().add(
                jwksJSON: String(decoding: try await api.call(.get, "/oauth2/jwks").body, as: UTF8.self)
            )
            let logout = try await keys.verify(try #require(posts.last?.token), as: BackChannelLogout.LogoutToken.self)
            let id = try await keys.verify(try #require(tokens.id_token), as: Claims.self)
            #expect(logout.iss == Self.issuer && logout.aud == "logs" && logout.sub == id.sub.value)
            #expect(logout.sid == id.sid && logout.events.keys.sorted() == [BackChannelLogout.event])
            let header = try #require(posts.last?.token.split(separator: ".").first)
            let typ = try JSONSerialization.jsonObject(with: Data(try #require(Base64URL(text: String(header))).bytes))
            #expect((typ as? [String: Any])?["typ"] as? String == "logout+jwt")
        }
    }

    static func logout(
        _ api: API,
        _ token: String?,
        _ parameters: [String: String],
        signOut: Bool = false
    )
        async throws -> OIDCLogoutAnswer
    {
        let body: [String: any Sendable] = [
            "parameters": parameters.map { [$0.key, $0.value] }, "signOut": signOut,
        ]
        let reply = try await api.call(.post, "/v1/oidc/logouts", json: body, token: token)
        #expect(reply.status == 200, "\(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
        return try APICoding.decoder().decode(OIDCLogoutAnswer.self, from: reply.body)
    }

    /// RP-initiated logout (docs/PROTOCOL.md §6.9): the hint must be an ID token this provider signed for the
    /// client; only a registered post-logout URI is gone to, with `state`; a confirmed sign-out revokes what
    /// this browser session granted (its clients told by back-channel logout), not another session's.
    @Test(arguments: Backend.available)
    func rpInitiatedLogoutChecksTheHintAndTheURIAndEndsOnlyThisBrowsersGrants(_ backend: Backend) async throws {
        let receiver = Receiver()
        let h = try await Harness.make(
            backend,
            configure: { $0.publicURL = Self.issuer },
            backChannel: receiver.deliver
        )
        try await h.run { api in
            try await api.register("oidcfred")
            try await api.register("oidcgina")
            let token = try await api.token("oidcfred")
            let elsewhere = try await api.token("oidcfred")  // another browser of the same account
            let gina = try await api.token("oidcgina")
            var client = Self.client("leave")
            client.postLogoutRedirectURIs = ["https://app.example.com/bye"]
            client.backchannelLogoutURI = "https://app.example.com/backchannel"
            #expect(try await h.storage.addOIDCClient(client))
            #expect(try await h.storage.addOIDCClient(Self.client("other")))
            let mine = try await Self.tokens(api, token, "leave")
            let theirs = try await Self.tokens(api, elsewhere, "leave")
            let hint = try #require(mine.id_token)
            let bye = "https://app.example.com/bye"

            // Refused, shown, nothing redirected: a hint not signed here, alg none, HS256 with a public key, a
            // hint for another client than client_id, an unregistered or look-alike URI, a URI with no client.
            let parts = hint.split(separator: ".").map(String.init)
            let none = Base64URL(Array(#"{"alg":"none","typ":"JWT"}"#.utf8)).text + "." + parts[1] + "."
            let jwks = String(decoding: try await api.call(.get, "/oauth2/jwks").body, as: UTF8.self)
            let hsInput = Base64URL(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8)).text + "." + parts[1]
            let hs = HMAC<SHA256>.authenticationCode(
                for: Array(hsInput.utf8),
                using: SymmetricKey(data: Array(jwks.utf8))
            )
            let forged = hsInput + "." + Base64URL(Array(Data(hs))).text
            var flipped = Array(parts[2])
            flipped[5] = flipped[5] == "A" ? "B" : "A"
            let tampered = parts[0] + "." + parts[1] + "." + String(flipped)
            for bad in [
                ["id_token_hint": none], ["id_token_hint": forged], ["id_token_hint": tampered],
                ["id_token_hint": "not.a.token"],
                ["id_token_hint": hint, "client_id": "other"],
                ["id_token_hint": hint, "post_logout_redirect_uri": "https://app.example.com/bye/../evil"],
                ["id_token_hint": hint, "post_logout_redirect_uri": "https://app.example.com.evil.com/bye"],
                ["client_id": "leave", "post_logout_redirect_uri": "javascript:alert(1)"],
                ["post_logout_redirect_uri": bye],
                ["client_id": "nobody", "post_logout_redirect_uri": bye],
            ] {
                let answer = try await Self.logout(api, token, bad, signOut: true)
                #expect(answer.action == .error && answer.location == nil, "\(bad.keys.sorted()): \(answer)")
            }
            #expect(try await api.call(.get, "/oauth2/userinfo", token: mine.access_token).status == 200)

            // Asked first: where it goes, that it is the same account; another account's hint is said.
            let asked = try await Self.logout(
                api,
                token,
                ["id_token_hint": hint, "post_logout_redirect_uri": bye, "state": "s-9"]
            )
            #expect(asked.action == .confirm && asked.clientName == "The leave app" && asked.otherAccount == false)
            #expect(asked.location == bye + "?state=s-9")
            #expect(try await Self.logout(api, gina, ["id_token_hint": hint]).otherAccount == true)

            // A sign-out asked with a session that ended is refused (the page renews it), not said to be done.
            let dead = try await api.call(
                .post,
                "/v1/oidc/logouts",
                json: ["parameters": [["id_token_hint", hint]], "signOut": true],
                token: "cs_ended"
            )
            #expect(dead.status == 401)
            #expect(try await api.call(.get, "/oauth2/userinfo", token: mine.access_token).status == 200)
            // Anonymous, with client_id alone: where it goes, not the client's name.
            let anonymous = try await Self.logout(api, nil, ["client_id": "leave", "post_logout_redirect_uri": bye])
            #expect(anonymous.action == .confirm && anonymous.clientName == nil && anonymous.location == bye)

            // Confirmed: this browser session's grant ends and its client hears of it; the other browser's not.
            let done = try await Self.logout(
                api,
                token,
                ["id_token_hint": hint, "post_logout_redirect_uri": bye, "state": "s-9"],
                signOut: true
            )
            #expect(done.action == .signedOut && done.location == bye + "?state=s-9")
            #expect(try await api.call(.get, "/oauth2/userinfo", token: mine.access_token).status == 401)
            #expect(try await api.call(.get, "/oauth2/userinfo", token: theirs.access_token).status == 200)
            for _ in 0..<200 where receiver.posts.withLock({ $0.count }) < 2 {
                try await Task.sleep(for: .milliseconds(100))
            }
            let keys = try await JWTKeyCollection().add(jwksJSON: jwks)
            let logoutToken = try await keys.verify(
                try #require(receiver.posts.withLock { $0.last?.token }),
                as: BackChannelLogout.LogoutToken.self
            )
            #expect(logoutToken.sid == (try await keys.verify(hint, as: Claims.self)).sid)
            // An expired hint still names its client (the spec allows it); signed out already: no question.
            h.clock.advance(3 * 3_600)
            let later = try await Self.logout(api, nil, ["id_token_hint": hint, "post_logout_redirect_uri": bye])
            #expect(later.action == .confirm && later.location == bye)
        }
    }

    /// "Connected apps" (docs/PROTOCOL.md §6.10): what the account allowed, by name; disconnecting forgets the
    /// consent (asked again) and ends the application's tokens at once; another account's is not touched.
    @Test(arguments: Backend.available)
    func connectedAppsAreListedAndDisconnectingEndsTheirTokens(_ backend: Backend) async throws {
        let receiver = Receiver()
        let h = try await Harness.make(
            backend,
            configure: { $0.publicURL = Self.issuer },
            backChannel: receiver.deliver
        )
        try await h.run { api in
            try await api.register("oidchal")
            try await api.register("oidcivy")
            let token = try await api.token("oidchal")
            let ivy = try await api.token("oidcivy")
            var zetaClient = Self.client("zeta")
            zetaClient.backchannelLogoutURI = "https://app.example.com/backchannel"
            #expect(try await h.storage.addOIDCClient(zetaClient))
            #expect(try await h.storage.addOIDCClient(Self.client("alpha")))
            #expect(try await h.storage.addOIDCClient(Self.client("inhouse", firstParty: true)))
            let zeta = try await Self.tokens(api, token, "zeta")
            _ = try await Self.tokens(api, token, "alpha")
            let inhouse = try await Self.tokens(api, token, "inhouse")
            let theirs = try await Self.tokens(api, ivy, "zeta")
            func apps(_ token: String) async throws -> [ConnectedApp] {
                let reply = try await api.call(.get, "/v1/me/connected-apps", token: token)
                #expect(reply.status == 200)
                return try APICoding.decoder().decode(ConnectedAppList.self, from: reply.body).apps
            }
            // By name; a first-party app asked no consent, so it is not listed.
            let listed = try await apps(token)
            #expect(listed.map(\.clientId) == ["alpha", "zeta"])
            #expect(Set(listed.first?.scope ?? []) == ["openid", "profile", "offline_access"])
            #expect(try await api.call(.get, "/v1/me/connected-apps").status == 401)

            #expect(try await api.call(.delete, "/v1/me/connected-apps/zeta", token: token).status == 204)
            #expect(try await api.call(.delete, "/v1/me/connected-apps/zeta", token: token).status == 404)
            #expect(try await api.call(.delete, "/v1/me/connected-apps/nobody", token: token).status == 404)
            // A first-party app was never allowed on the consent screen: nothing to disconnect, nothing ended.
            #expect(try await api.call(.delete, "/v1/me/connected-apps/inhouse", token: token).status == 404)
            #expect(try await api.call(.get, "/oauth2/userinfo", token: inhouse.access_token).status == 200)
            #expect(try await apps(token).map(\.clientId) == ["alpha"])
            #expect(try await api.call(.get, "/oauth2/userinfo", token: zeta.access_token).status == 401)
            // The app hears of it by back-channel logout (its first try answered 503, then again).
            for _ in 0..<200 where receiver.posts.withLock({ $0.count }) < 2 {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(
                receiver.posts.withLock { $0.map(\.uri) }
                    == Array(repeating: "https://app.example.com/backchannel", count: 2)
            )
            let refreshed = try await Self.form(
                api,
                "/oauth2/token",
                ["grant_type": "refresh_token", "refresh_token": zeta.refresh_token ?? ""],
                basic: ("zeta", "s3cret")
            )
            #expect(refreshed.status == 400)
            // Asked again next time; ivy's connection to the same app is hers and still works.
            #expect(try await Self.authorize(api, token, Self.parameters("zeta")).action == .consent)
            #expect(try await api.call(.get, "/oauth2/userinfo", token: theirs.access_token).status == 200)
            #expect(try await apps(ivy).map(\.clientId) == ["zeta"])
        }
    }

    /// A grant stored just after its browser signed out (the sign-out's revocation already done) is revoked by
    /// the authorization itself, which looks at the session again once the grant is stored.
    @Test(arguments: Backend.available)
    func anAuthorizationWhoseBrowserSignedOutMeanwhileGivesNoCode(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.publicURL = Self.issuer }
        try await h.run { api in
            try await api.register("oidcrace")
            let token = try await api.token("oidcrace")
            #expect(try await h.storage.addOIDCClient(Self.client("race", firstParty: true)))
            let auth = try await h.services.sessions.authenticate(token: token)
            let origin = RequestOrigin(address: "127.0.0.1", userAgent: "test")
            let answer = try await h.services.oidc.authorize(
                Self.parameters("race").map { ($0[0], $0[1]) },
                auth: auth,
                origin: origin,
                stillSignedIn: { false }
            )
            guard case .redirect(let location) = answer else {
                Issue.record("\(answer)")
                return
            }
            #expect(Self.query(location)["error"] == "login_required" && Self.query(location)["code"] == nil)
            let live = try await h.storage.sql.raw(
                "SELECT COUNT(*) AS n FROM oidc_grants WHERE client_id = 'race' AND revoked_at IS NULL"
            ).first()?.decode(column: "n", as: Int.self)
            #expect(live == 0)
            // Still signed in: the code, as always.
            let fine = try await h.services.oidc.authorize(
                Self.parameters("race").map { ($0[0], $0[1]) },
                auth: auth,
                origin: origin,
                stillSignedIn: { true }
            )
            guard case .redirect(let code) = fine else { return }
            #expect(Self.query(code)["code"] != nil)
        }
    }

    /// A browser's own sign-out (DELETE /v1/sessions/current, Home's "Sign out") ends the grants made in that
    /// browser session and tells their clients; another session's grants stay.
    @Test(arguments: Backend.available)
    func aBrowsersSignOutEndsTheGrantsMadeInItAndTellsTheirClients(_ backend: Backend) async throws {
        let receiver = Receiver()
        let h = try await Harness.make(
            backend,
            configure: { $0.publicURL = Self.issuer },
            backChannel: receiver.deliver
        )
        try await h.run { api in
            try await api.register("oidcjay")
            let token = try await api.token("oidcjay")
            let elsewhere = try await api.token("oidcjay")
            var client = Self.client("told")
            client.backchannelLogoutURI = "https://app.example.com/backchannel"
            #expect(try await h.storage.addOIDCClient(client))
            let mine = try await Self.tokens(api, token, "told")
            let theirs = try await Self.tokens(api, elsewhere, "told")
            #expect(try await api.call(.delete, "/v1/sessions/current", token: token).status == 204)
            var ended = 0
            for _ in 0..<100 {
                ended = try await api.call(.get, "/oauth2/userinfo", token: mine.access_token).status
                if ended == 401 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(ended == 401, "the grant outlived the browser's sign-out")
            #expect(try await api.call(.get, "/oauth2/userinfo", token: theirs.access_token).status == 200)
            for _ in 0..<200 where receiver.posts.withLock({ $0.count }) < 2 {
                try await Task.sleep(for: .milliseconds(100))
            }
            let keys = try await JWTKeyCollection().add(
                jwksJSON: String(decoding: try await api.call(.get, "/oauth2/jwks").body, as: UTF8.self)
            )
            let told = try await keys.verify(
                try #require(receiver.posts.withLock { $0.last?.token }),
                as: BackChannelLogout.LogoutToken.self
            )
            #expect(told.sid == (try await keys.verify(try #require(mine.id_token), as: Claims.self)).sid)
        }
    }

    @Test func withoutAPublicURLTheProviderSaysWhyItIsOff() async throws {
        let h = try await Harness.make(.sqlite) { $0.publicURL = nil }
        try await h.run { api in
            let discovery = try await api.call(.get, "/.well-known/openid-configuration")
            #expect(
                discovery.status == 404
                    && (discovery.json["error_description"] as? String)?.contains("COUNTERSIGN_PUBLIC_URL") == true
            )
        }
    }
}
