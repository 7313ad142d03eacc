import CountersignAPI
import Crypto
import Foundation
import HTTPTypes
import JWTKit
import Testing

@testable import CountersignServer

/// The OpenID Foundation's conformance modules that apply to this provider, mirrored one test each under the
/// module's name (the suite itself needs Java, MongoDB and Docker, which this machine does not run): the Basic
/// OP plan (`oidcc-basic-certification-test-plan`, code flow, `client_secret_basic`), the Config OP plan's
/// discovery module, and the RP-initiated logout plan. Each does what the module does, on both backends;
/// README and docs/TESTING.md list them, and the modules that do not apply, with why.
@Suite(.closesStorage) struct OIDFConformanceTests {
    typealias Flow = OIDCFlowTests
    static let bye = "https://app.example.com/bye"

    /// A signed-in browser (`token`) of `oidf` whose consent for client `rp` is given, on a fresh server.
    struct Context {
        let h: Harness
        let api: API
        let token: String

        /// The answer to an authorization of `rp` with `extra` (an empty value removes a parameter).
        func authorize(
            _ extra: [String: String] = [:],
            token: String? = nil,
            consent: Bool? = nil,
            signedInSince: Date? = nil
        ) async throws -> OIDCAuthorizationAnswer {
            let body = OIDCAuthorizationRequest(
                parameters: Flow.parameters("rp", extra),
                consent: consent,
                signedInSince: signedInSince
            )
            let reply = try await api.call(
                .post,
                "/v1/oidc/authorizations",
                raw: try APICoding.encoder().encode(body),
                token: token ?? self.token,
                headers: [.contentType: "application/json"]
            )
            #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
            return try APICoding.decoder().decode(OIDCAuthorizationAnswer.self, from: reply.body)
        }

        func code(_ answer: OIDCAuthorizationAnswer) throws -> String {
            try #require(Flow.query(answer.location)["code"], "\(answer)")
        }

        func exchange(_ code: String, pkce: Bool = true) async throws -> API.Reply {
            var form = ["grant_type": "authorization_code", "code": code, "redirect_uri": Flow.redirect]
            if pkce { form["code_verifier"] = Flow.verifier }
            return try await Flow.form(api, "/oauth2/token", form, basic: ("rp", "s3cret"))
        }

        func tokens(_ extra: [String: String] = [:]) async throws -> OIDCTokenResponse {
            let reply = try await exchange(try code(try await authorize(extra)))
            #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
            return try JSONDecoder().decode(OIDCTokenResponse.self, from: reply.body)
        }

        func claims(_ idToken: String?) async throws -> [String: Any] {
            let jwks = String(decoding: try await api.call(.get, "/oauth2/jwks").body, as: UTF8.self)
            let keys = try await JWTKeyCollection().add(jwksJSON: jwks)
            _ = try await keys.verify(try #require(idToken), as: Flow.Claims.self)
            return try OIDCPairingTests.claims(try #require(idToken))
        }

        func logout(_ parameters: [String: String], signOut: Bool = false) async throws -> OIDCLogoutAnswer {
            try await Flow.logout(api, token, parameters, signOut: signOut)
        }
    }

    static func with(_ backend: Backend, _ test: @escaping @Sendable (Context) async throws -> Void) async throws {
        let h = try await Harness.make(backend) { $0.publicURL = Flow.issuer }
        try await h.run { api in
            try await api.register("oidf")
            let token = try await api.token("oidf")
            var client = Flow.client("rp")
            client.postLogoutRedirectURIs = [bye, "https://app.example.com/bye?from=rp"]
            #expect(try await h.storage.addOIDCClient(client))
            let context = Context(h: h, api: api, token: token)
            _ = try context.code(try await context.authorize(consent: true))  // the consent, given once
            try await test(context)
        }
    }

    static func error(_ answer: OIDCAuthorizationAnswer) -> String? { Flow.query(answer.location)["error"] }
}

// MARK: Basic OP plan

extension OIDFConformanceTests {
    @Test("oidcc-server", arguments: Backend.available)
    func server(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let tokens = try await c.tokens()
            let claims = try await c.claims(tokens.id_token)
            #expect(claims["iss"] as? String == Flow.issuer && claims["aud"] as? String == "rp")
            #expect(claims["nonce"] as? String == "n-1" && claims["sub"] is String)
            #expect((claims["exp"] as? Int ?? 0) > (claims["iat"] as? Int ?? .max))
            #expect(tokens.token_type == "Bearer" && tokens.expires_in > 0)
        }
    }

    @Test("oidcc-response-type-missing", arguments: Backend.available)
    func responseTypeMissing(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let answer = try await c.authorize(["response_type": ""])
            #expect(
                Self.error(answer) == "unsupported_response_type" && answer.location?.hasPrefix(Flow.redirect) == true
            )
        }
    }

    @Test("oidcc-userinfo-get", arguments: Backend.available)
    func userinfoGet(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let tokens = try await c.tokens()
            let info = try await c.api.call(.get, "/oauth2/userinfo", token: tokens.access_token)
            let sub = try await c.claims(tokens.id_token)["sub"] as? String
            #expect(info.status == 200 && info.json["sub"] as? String == sub)
        }
    }

    @Test("oidcc-userinfo-post-header", arguments: Backend.available)
    func userinfoPostHeader(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let tokens = try await c.tokens()
            let info = try await c.api.call(.post, "/oauth2/userinfo", token: tokens.access_token)
            #expect(info.status == 200 && info.json["sub"] is String)
        }
    }

    @Test("oidcc-userinfo-post-body", arguments: Backend.available)
    func userinfoPostBody(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let tokens = try await c.tokens()
            let info = try await Flow.form(c.api, "/oauth2/userinfo", ["access_token": tokens.access_token])
            #expect(info.status == 200 && info.json["sub"] is String)
        }
    }

    @Test("oidcc-ensure-request-without-nonce-succeeds-for-code-flow", arguments: Backend.available)
    func withoutNonce(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let tokens = try await c.tokens(["nonce": ""])
            #expect(try await c.claims(tokens.id_token)["nonce"] == nil)
        }
    }

    @Test("oidcc-scope-profile", arguments: Backend.available)
    func scopeProfile(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let tokens = try await c.tokens()
            let info = try await c.api.call(.get, "/oauth2/userinfo", token: tokens.access_token)
            #expect(info.json["preferred_username"] as? String == "oidf" && info.json["given_name"] as? String == "Ada")
            #expect(info.json["family_name"] as? String == "Lovelace" && info.json["name"] as? String == "Ada Lovelace")
        }
    }

    @Test("oidcc-ensure-other-scope-order-succeeds", arguments: Backend.available)
    func otherScopeOrder(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let tokens = try await c.tokens(["scope": "profile openid"])
            #expect(Set(tokens.scope.split(separator: " ")) == ["openid", "profile"])
        }
    }

    @Test("oidcc-display-page", arguments: Backend.available)
    func displayPage(_ backend: Backend) async throws {
        try await Self.with(backend) { c in _ = try c.code(try await c.authorize(["display": "page"])) }
    }

    @Test("oidcc-display-popup", arguments: Backend.available)
    func displayPopup(_ backend: Backend) async throws {
        try await Self.with(backend) { c in _ = try c.code(try await c.authorize(["display": "popup"])) }
    }

    @Test("oidcc-prompt-login", arguments: Backend.available)
    func promptLogin(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let first = try await c.claims(try await c.tokens().id_token)
            let asked = try await c.authorize(["prompt": "login"])
            #expect(asked.action == .signIn && asked.reason == "reauthenticate", "\(asked)")
            let since = try #require(asked.since)
            c.h.clock.advance(2)
            let again = try await c.api.token("oidf")  // the sign-in the page makes
            let second = try await c.claims(
                try JSONDecoder().decode(
                    OIDCTokenResponse.self,
                    from: try await c.exchange(
                        try c.code(try await c.authorize(["prompt": "login"], token: again, signedInSince: since))
                    ).body
                ).id_token
            )
            #expect((second["auth_time"] as? Int ?? 0) > (first["auth_time"] as? Int ?? .max))
        }
    }

    @Test("oidcc-prompt-none-not-logged-in", arguments: Backend.available)
    func promptNoneNotLoggedIn(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let reply = try await c.api.call(
                .post,
                "/v1/oidc/authorizations",
                json: ["parameters": Flow.parameters("rp", ["prompt": "none"])]
            )
            let answer = try APICoding.decoder().decode(OIDCAuthorizationAnswer.self, from: reply.body)
            #expect(Self.error(answer) == "login_required" && Flow.query(answer.location)["state"] == "st-1")
        }
    }

    @Test("oidcc-prompt-none-logged-in", arguments: Backend.available)
    func promptNoneLoggedIn(_ backend: Backend) async throws {
        try await Self.with(backend) { c in _ = try c.code(try await c.authorize(["prompt": "none"])) }
    }

    @Test("oidcc-max-age-1", arguments: Backend.available)
    func maxAge1(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            c.h.clock.advance(2)
            let asked = try await c.authorize(["max_age": "1"])
            #expect(asked.action == .signIn && asked.reason == "reauthenticate", "\(asked)")
            let fresh = try await c.api.token("oidf")
            let tokens = try JSONDecoder().decode(
                OIDCTokenResponse.self,
                from: try await c.exchange(try c.code(try await c.authorize(["max_age": "1"], token: fresh))).body
            )
            let claims = try await c.claims(tokens.id_token)
            #expect(claims["auth_time"] as? Int == Int(c.h.clock.now().timeIntervalSince1970))
        }
    }

    @Test("oidcc-max-age-10000", arguments: Backend.available)
    func maxAge10000(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            c.h.clock.advance(2)
            let claims = try await c.claims(try await c.tokens(["max_age": "10000"]).id_token)
            #expect(claims["auth_time"] is Int)
        }
    }

    @Test("oidcc-ensure-request-with-unknown-parameter-succeeds", arguments: Backend.available)
    func unknownParameter(_ backend: Backend) async throws {
        try await Self.with(backend) { c in _ = try c.code(try await c.authorize(["extra": "foobar"])) }
    }

    @Test("oidcc-id-token-hint", arguments: Backend.available)
    func idTokenHint(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let hint = try #require(try await c.tokens().id_token)
            _ = try c.code(try await c.authorize(["prompt": "none", "id_token_hint": hint]))
            // Not this provider's, or for another account than the one signed in: refused.
            let forged = String(hint.dropLast(3)) + (hint.hasSuffix("AAA") ? "BBB" : "AAA")
            #expect(
                Self.error(try await c.authorize(["prompt": "none", "id_token_hint": forged])) == "invalid_request"
            )
            // Without prompt=none a hint that does not verify is simply not used.
            _ = try c.code(try await c.authorize(["id_token_hint": forged]))
            try await c.api.register("oidf2")
            let other = try await c.api.token("oidf2")
            _ = try c.code(try await c.authorize(token: other, consent: true))
            let mismatch = try await c.authorize(["prompt": "none", "id_token_hint": hint], token: other)
            #expect(Self.error(mismatch) == "login_required", "\(mismatch)")
        }
    }

    @Test("oidcc-login-hint", arguments: Backend.available)
    func loginHint(_ backend: Backend) async throws {
        try await Self.with(backend) { c in _ = try c.code(try await c.authorize(["login_hint": "oidf"])) }
    }

    @Test("oidcc-ui-locales", arguments: Backend.available)
    func uiLocales(_ backend: Backend) async throws {
        try await Self.with(backend) { c in _ = try c.code(try await c.authorize(["ui_locales": "se"])) }
    }

    @Test("oidcc-claims-locales", arguments: Backend.available)
    func claimsLocales(_ backend: Backend) async throws {
        try await Self.with(backend) { c in _ = try c.code(try await c.authorize(["claims_locales": "se"])) }
    }

    @Test("oidcc-ensure-request-with-acr-values-succeeds", arguments: Backend.available)
    func acrValues(_ backend: Backend) async throws {
        try await Self.with(backend) { c in _ = try c.code(try await c.authorize(["acr_values": "1 2"])) }
    }

    @Test("oidcc-codereuse", arguments: Backend.available)
    func codeReuse(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let code = try c.code(try await c.authorize())
            let first = try JSONDecoder().decode(OIDCTokenResponse.self, from: try await c.exchange(code).body)
            let second = try await c.exchange(code)
            #expect(second.status == 400 && second.json["error"] as? String == "invalid_grant")
            #expect(try await c.api.call(.get, "/oauth2/userinfo", token: first.access_token).status == 401)
        }
    }

    @Test("oidcc-codereuse-30seconds", arguments: Backend.available)
    func codeReuse30Seconds(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let code = try c.code(try await c.authorize())
            let first = try JSONDecoder().decode(OIDCTokenResponse.self, from: try await c.exchange(code).body)
            c.h.clock.advance(30)
            #expect(try await c.exchange(code).json["error"] as? String == "invalid_grant")
            #expect(try await c.api.call(.get, "/oauth2/userinfo", token: first.access_token).status == 401)
            let refresh = try await Flow.form(
                c.api,
                "/oauth2/token",
                ["grant_type": "refresh_token", "refresh_token": try #require(first.refresh_token)],
                basic: ("rp", "s3cret")
            )
            #expect(refresh.json["error"] as? String == "invalid_grant")
        }
    }

    @Test("oidcc-ensure-registered-redirect-uri", arguments: Backend.available)
    func registeredRedirectURI(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let answer = try await c.authorize(["redirect_uri": "https://app.example.com/cb/other"])
            #expect(answer.action == .error && answer.location == nil, "\(answer)")
        }
    }

    @Test("oidcc-unsigned-request-object-supported-correctly-or-rejected-as-unsupported", arguments: Backend.available)
    func unsignedRequestObject(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let object =
                Base64URL(Array(#"{"alg":"none"}"#.utf8)).text + "."
                + Base64URL(Array(#"{"scope":"openid"}"#.utf8)).text
                + "."
            let answer = try await c.authorize(["request": object])
            #expect(Self.error(answer) == "request_not_supported")
        }
    }

    @Test("oidcc-claims-essential", arguments: Backend.available)
    func claimsEssential(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            _ = try c.code(try await c.authorize(["claims": #"{"userinfo":{"name":{"essential":true}}}"#]))
        }
    }

    @Test("oidcc-ensure-request-object-with-redirect-uri", arguments: Backend.available)
    func requestObjectWithRedirectURI(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let object =
                Base64URL(Array(#"{"alg":"none"}"#.utf8)).text + "."
                + Base64URL(Array(#"{"redirect_uri":"https://app.example.com/cb"}"#.utf8)).text + "."
            let answer = try await c.authorize(["request": object])
            #expect(Self.error(answer) == "request_not_supported")
        }
    }

    @Test("oidcc-refresh-token", arguments: Backend.available)
    func refreshToken(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let tokens = try await c.tokens()
            let refresh = try #require(tokens.refresh_token)
            let reply = try await Flow.form(
                c.api,
                "/oauth2/token",
                ["grant_type": "refresh_token", "refresh_token": refresh],
                basic: ("rp", "s3cret")
            )
            let renewed = try JSONDecoder().decode(OIDCTokenResponse.self, from: reply.body)
            #expect(renewed.refresh_token != refresh && renewed.access_token != tokens.access_token)
            let claims = try await c.claims(renewed.id_token)
            #expect(claims["sub"] as? String == (try await c.claims(tokens.id_token))["sub"] as? String)
            // Another client's refresh token is refused.
            var other = Flow.client("rp2")
            other.redirectURIs = [Flow.redirect]
            #expect(try await c.h.storage.addOIDCClient(other))
            let stolen = try await Flow.form(
                c.api,
                "/oauth2/token",
                ["grant_type": "refresh_token", "refresh_token": try #require(renewed.refresh_token)],
                basic: ("rp2", "s3cret")
            )
            #expect(stolen.json["error"] as? String == "invalid_grant")
        }
    }

    @Test("oidcc-ensure-request-with-valid-pkce-succeeds", arguments: Backend.available)
    func validPKCE(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let good = try await c.exchange(try c.code(try await c.authorize()))
            #expect(good.status == 200)
            let withoutVerifier = try await c.exchange(try c.code(try await c.authorize()), pkce: false)
            #expect(withoutVerifier.status == 400 && withoutVerifier.json["error"] as? String == "invalid_grant")
        }
    }

    @Test("oidcc-ensure-post-request-succeeds", arguments: Backend.available)
    func postRequest(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let fields = Dictionary(uniqueKeysWithValues: Flow.parameters("rp").map { ($0[0], $0[1]) })
            let posted = try await Flow.form(c.api, "/oauth2/authorize", fields)
            #expect(posted.status == 303)
            let location = try #require(posted.headers[.location])
            #expect(location.hasPrefix("/oauth2/authorize?"))
            // The page then reads them from its URL, in the order posted.
            let items = URLComponents(string: location)?.queryItems ?? []
            let answer = try await Flow.authorize(c.api, c.token, items.map { [$0.name, $0.value ?? ""] })
            _ = try c.code(answer)
            let page = try await c.api.call(.get, location)
            #expect(page.status == 200)
            // Not form encoding: refused, not redirected.
            let bad = try await c.api.call(
                .post,
                "/oauth2/authorize",
                raw: Data("client_id=rp&x=<script>".utf8),
                headers: [.contentType: "application/x-www-form-urlencoded"]
            )
            #expect(bad.status == 400 && bad.headers[.location] == nil)
        }
    }

    /// Not a module of its own in the plan: every module checks the ID token's signature; this one fails it.
    @Test("oidcc-idtoken-signature", arguments: Backend.available)
    func idTokenSignature(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let idToken = try #require(try await c.tokens().id_token)
            let parts = idToken.split(separator: ".").map(String.init)
            let head = try #require(Base64URL(text: parts[0]))
            let json = try #require(try JSONSerialization.jsonObject(with: Data(head.bytes)) as? [String: Any])
            #expect(json["alg"] as? String == "ES256" && json["kid"] is String)
            let jwks = try await c.api.call(.get, "/oauth2/jwks")
            let kids = (jwks.json["keys"] as? [[String: Any]] ?? []).compactMap { $0["kid"] as? String }
            #expect(kids.contains(json["kid"] as? String ?? "-"))
            var sig = Array(parts[2])
            sig[10] = sig[10] == "A" ? "B" : "A"
            await #expect(throws: (any Error).self) {
                _ = try await c.claims(parts[0] + "." + parts[1] + "." + String(sig))
            }
        }
    }
}

// MARK: Config OP plan

extension OIDFConformanceTests {
    @Test("oidcc-discovery-endpoint-verification", arguments: Backend.available)
    func discovery(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let meta = try await c.api.call(.get, "/.well-known/openid-configuration").json
            #expect(meta["issuer"] as? String == Flow.issuer)
            for (name, path) in [
                ("authorization_endpoint", "/oauth2/authorize"), ("token_endpoint", "/oauth2/token"),
                ("userinfo_endpoint", "/oauth2/userinfo"), ("jwks_uri", "/oauth2/jwks"),
                ("end_session_endpoint", "/oauth2/logout"),
            ] {
                #expect(meta[name] as? String == Flow.issuer + path, "\(name)")
            }
            #expect((meta["response_types_supported"] as? [String]) == ["code"])
            #expect((meta["subject_types_supported"] as? [String])?.contains("public") == true)
            #expect((meta["id_token_signing_alg_values_supported"] as? [String])?.contains("RS256") == true)
            #expect((meta["scopes_supported"] as? [String])?.contains("openid") == true)
            #expect(meta["authorization_response_iss_parameter_supported"] as? Bool == true)
            #expect((meta["code_challenge_methods_supported"] as? [String]) == ["S256"])
            let keys = try await c.api.call(.get, "/oauth2/jwks").json["keys"] as? [[String: Any]] ?? []
            #expect(
                !keys.isEmpty
                    && keys.allSatisfy { $0["d"] == nil && $0["kid"] is String && $0["use"] as? String == "sig" }
            )
        }
    }
}

// MARK: RP-initiated logout plan

extension OIDFConformanceTests {
    @Test("oidcc-rp-initiated-logout", arguments: Backend.available)
    func rpInitiatedLogout(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let tokens = try await c.tokens()
            let p = [
                "id_token_hint": try #require(tokens.id_token), "post_logout_redirect_uri": Self.bye, "state": "l-1",
            ]
            #expect(try await c.logout(p).action == .confirm)
            let done = try await c.logout(p, signOut: true)
            #expect(done.action == .signedOut && done.location == Self.bye + "?state=l-1")
            #expect(try await c.api.call(.get, "/oauth2/userinfo", token: tokens.access_token).status == 401)
        }
    }

    @Test("oidcc-rp-initiated-logout-bad-post-logout-redirect-uri", arguments: Backend.available)
    func logoutBadURI(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let hint = try #require(try await c.tokens().id_token)
            let answer = try await c.logout([
                "id_token_hint": hint, "post_logout_redirect_uri": "https://app.example.com/evil",
            ])
            #expect(answer.action == .error && answer.location == nil)
        }
    }

    @Test("oidcc-rp-initiated-logout-modified-id-token-hint", arguments: Backend.available)
    func logoutModifiedHint(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let hint = try #require(try await c.tokens().id_token)
            let parts = hint.split(separator: ".").map(String.init)
            var claims = try OIDCPairingTests.claims(hint)
            claims["sub"] = "someone-else"
            let modified = [
                parts[0], Base64URL(Array(try JSONSerialization.data(withJSONObject: claims))).text, parts[2],
            ]
            .joined(separator: ".")
            let answer = try await c.logout(["id_token_hint": modified, "post_logout_redirect_uri": Self.bye])
            #expect(answer.action == .error && answer.location == nil)
        }
    }

    @Test("oidcc-rp-initiated-logout-no-id-token-hint", arguments: Backend.available)
    func logoutNoHint(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            _ = try await c.tokens()
            let p = ["client_id": "rp", "post_logout_redirect_uri": Self.bye, "state": "l-2"]
            let done = try await c.logout(p, signOut: true)
            #expect(done.action == .signedOut && done.location == Self.bye + "?state=l-2")
        }
    }

    @Test("oidcc-rp-initiated-logout-no-params", arguments: Backend.available)
    func logoutNoParams(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            #expect(try await c.logout([:]).action == .confirm)
            let done = try await c.logout([:], signOut: true)
            #expect(done.action == .signedOut && done.location == nil)
        }
    }

    @Test("oidcc-rp-initiated-logout-no-post-logout-redirect-uri", arguments: Backend.available)
    func logoutNoURI(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let hint = try #require(try await c.tokens().id_token)
            let done = try await c.logout(["id_token_hint": hint, "state": "l-3"], signOut: true)
            #expect(done.action == .signedOut && done.location == nil)
        }
    }

    @Test("oidcc-rp-initiated-logout-no-state", arguments: Backend.available)
    func logoutNoState(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let hint = try #require(try await c.tokens().id_token)
            let done = try await c.logout(["id_token_hint": hint, "post_logout_redirect_uri": Self.bye], signOut: true)
            #expect(done.location == Self.bye)
        }
    }

    @Test("oidcc-rp-initiated-logout-only-state", arguments: Backend.available)
    func logoutOnlyState(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let done = try await c.logout(["state": "l-4"], signOut: true)
            #expect(done.action == .signedOut && done.location == nil)
        }
    }

    @Test("oidcc-rp-initiated-logout-query-added-to-post-logout-redirect-uri", arguments: Backend.available)
    func logoutQueryAdded(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let hint = try #require(try await c.tokens().id_token)
            let answer = try await c.logout(["id_token_hint": hint, "post_logout_redirect_uri": Self.bye + "?extra=1"])
            #expect(answer.action == .error && answer.location == nil)
        }
    }

    @Test("oidcc-rp-initiated-logout-query-in-registered-post-logout-redirect-uri", arguments: Backend.available)
    func logoutQueryRegistered(_ backend: Backend) async throws {
        try await Self.with(backend) { c in
            let hint = try #require(try await c.tokens().id_token)
            let p = ["id_token_hint": hint, "post_logout_redirect_uri": Self.bye + "?from=rp", "state": "l-5"]
            let done = try await c.logout(p, signOut: true)
            #expect(done.location == Self.bye + "?from=rp&state=l-5", "\(done)")
        }
    }
}
