import CountersignAPI
import Crypto
import Foundation
import Synchronization
import Testing

@testable import CountersignServer

/// What peers' advisories taught (issue 36 §2), one named test each, on both backends, through the HTTP API:
/// redirect URIs (Keycloak, Pocket ID and the 2026 CVEs), PKCE (authentik, Kanidm), code and refresh-token
/// reuse (including after a restart and within one second), the factors and the lockout (ZITADEL), consent
/// bound to its browser session (Hydra), and the tokens the server reads (`id_token_hint`).
@Suite(.closesStorage) struct OIDCAdvisoryTests {
    typealias Flow = OIDCFlowTests

    /// A server with `oidcadv` signed in (`token`) and clients `conf` (confidential, consent given) and `native`
    /// (public, first party).
    static func with(
        _ backend: Backend,
        location: DatabaseLocation? = nil,
        restarted: Bool = false,
        _ test: @escaping @Sendable (Harness, API, String) async throws -> Void
    ) async throws {
        let h = try await Harness.make(backend, location: location) { $0.publicURL = Flow.issuer }
        try await h.run { api in
            if !restarted {
                try await api.register("oidcadv")
                #expect(try await h.storage.addOIDCClient(Flow.client("conf")))
                var native = Flow.client("native", secret: nil, firstParty: true)
                native.redirectURIs = ["http://127.0.0.1:5000/native", "http://127.0.0.1/cb"]
                #expect(try await h.storage.addOIDCClient(native))
            }
            let token = try await api.token("oidcadv")
            _ = try await Flow.authorize(api, token, Flow.parameters("conf"), consent: true)
            try await test(h, api, token)
        }
    }

    static func shownNowhere(
        _ api: API,
        _ token: String?,
        _ parameters: [[String]],
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let answer = try await Flow.authorize(api, token, parameters)
        #expect(
            answer.action == .error && answer.location == nil,
            "\(parameters): \(answer)",
            sourceLocation: sourceLocation
        )
    }

    static func exchange(_ api: API, _ code: String, verifier: String?) async throws -> API.Reply {
        var form = ["grant_type": "authorization_code", "code": code, "redirect_uri": Flow.redirect]
        if let verifier { form["code_verifier"] = verifier }
        return try await Flow.form(api, "/oauth2/token", form, basic: ("conf", "s3cret"))
    }

    static func refresh(_ api: API, _ token: String) async throws -> API.Reply {
        try await Flow.form(
            api,
            "/oauth2/token",
            ["grant_type": "refresh_token", "refresh_token": token],
            basic: ("conf", "s3cret")
        )
    }

    @Test(
        "Keycloak CVE-2024-8883: a loopback URI opens any port only for a native (public) client",
        arguments: Backend.available
    )
    func keycloakLoopbackPorts(_ backend: Backend) async throws {
        try await Self.with(backend) { h, api, token in
            var loopback = Flow.client("loopconf")
            loopback.redirectURIs = ["http://127.0.0.1:5000/cb"]
            #expect(try await h.storage.addOIDCClient(loopback))
            let own = Flow.parameters("loopconf", ["redirect_uri": "http://127.0.0.1:5000/cb"])
            #expect(try await Flow.authorize(api, token, own, consent: true).action == .redirect)
            for uri in ["http://127.0.0.1:5001/cb", "http://127.0.0.2:5000/cb", "http://localhost:5000/cb"] {
                try await Self.shownNowhere(api, token, Flow.parameters("loopconf", ["redirect_uri": uri]))
            }
            // The native client: any port of its loopback URI, never another host or path.
            let anyPort = try await Flow.authorize(
                api,
                token,
                Flow.parameters("native", ["redirect_uri": "http://127.0.0.1:49152/cb"]),
                consent: true
            )
            #expect(anyPort.location?.hasPrefix("http://127.0.0.1:49152/cb?") == true, "\(anyPort)")
            for uri in ["http://127.0.0.1.evil.com:5000/cb", "http://127.0.0.1:49152/cb/x", "http://[::2]:5000/cb"] {
                try await Self.shownNowhere(api, token, Flow.parameters("native", ["redirect_uri": uri]))
            }
        }
    }

    @Test("CVE-2026-7504: userinfo and @ in a redirect URI", arguments: Backend.available)
    func userinfoTricks(_ backend: Backend) async throws {
        try await Self.with(backend) { _, api, token in
            for uri in [
                "https://app.example.com@evil.com/cb", "https://user@app.example.com/cb",
                "https://app.example.com%40evil.com/cb", "https://evil.com#@app.example.com/cb",
            ] {
                try await Self.shownNowhere(api, token, Flow.parameters("conf", ["redirect_uri": uri]))
            }
            #expect(throws: OIDCClientError.self) {
                _ = try RedirectURI(registering: "https://user@app.example.com/cb")
            }
        }
    }

    @Test("CVE-2026-3872: dot segments in any spelling reach no other path", arguments: Backend.available)
    func dotSegments(_ backend: Backend) async throws {
        try await Self.with(backend) { _, api, token in
            for uri in [
                "https://app.example.com/cb/..;/evil", "https://app.example.com/cb/../evil",
                "https://app.example.com/cb/%2e%2e/evil", "https://app.example.com/cb/%2E%2E;/evil",
                "https://app.example.com/x/../cb",
            ] {
                try await Self.shownNowhere(api, token, Flow.parameters("conf", ["redirect_uri": uri]))
            }
        }
    }

    @Test("A registered https URI matches no longer host, other port or longer path", arguments: Backend.available)
    func exactMatch(_ backend: Backend) async throws {
        try await Self.with(backend) { _, api, token in
            for uri in [
                "https://app.example.com.evil.com/cb", "https://app.example.com/cb/longer",
                "https://app.example.com/cb?x=1",
                "https://app.example.com:444/cb", "https://APP.example.com/cb", "http://app.example.com/cb",
                "https://app.example.com/cb/",
            ] {
                try await Self.shownNowhere(api, token, Flow.parameters("conf", ["redirect_uri": uri]))
            }
        }
    }

    @Test(
        "CVE-2026-9086: javascript:, data: and mixed-case schemes are refused at registration",
        arguments: Backend.available
    )
    func schemesAtRegistration(_ backend: Backend) async throws {
        try await Self.with(backend) { h, _, _ in
            for uri in [
                "javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,x", "HTTPS://app.example.com/cb",
                "vbscript:x",
            ] {
                var client = Flow.client("bad-scheme")
                client.redirectURIs = [uri]
                #expect(throws: OIDCClientError.self, "\(uri)") { _ = try client.validated() }
                client.redirectURIs = [Flow.redirect]
                client.postLogoutRedirectURIs = [uri]
                #expect(throws: OIDCClientError.self, "post-logout \(uri)") { _ = try client.validated() }
            }
            let stored = try await h.storage.oidcClient(id: "bad-scheme")
            #expect(stored == nil)
        }
    }

    @Test(
        "Pocket ID GHSA-2wvm-8mvp-22qv: prompt=none with an unregistered URI redirects nowhere",
        arguments: Backend.available
    )
    func promptNoneUnregistered(_ backend: Backend) async throws {
        try await Self.with(backend) { _, api, token in
            for session in [token, nil] {
                try await Self.shownNowhere(
                    api,
                    session,
                    Flow.parameters("conf", ["prompt": "none", "redirect_uri": "https://evil.example.com/cb"])
                )
            }
        }
    }

    @Test("authentik CVE-2023-48228 and Kanidm #1097: PKCE as the code was issued", arguments: Backend.available)
    func pkce(_ backend: Backend) async throws {
        try await Self.with(backend) { _, api, token in
            func code(_ p: [[String]]) async throws -> String {
                try #require(Flow.query(try await Flow.authorize(api, token, p).location)["code"])
            }
            // A challenge, then no verifier.
            let c1 = try await code(Flow.parameters("conf"))
            #expect(try await Self.exchange(api, c1, verifier: nil).json["error"] as? String == "invalid_grant")
            // No challenge, then a verifier.
            let c2 = try await code(Flow.parameters("conf", pkce: false))
            #expect(
                try await Self.exchange(api, c2, verifier: Flow.verifier).json["error"] as? String == "invalid_grant"
            )
            // plain.
            let plain = try await Flow.authorize(
                api,
                token,
                Flow.parameters("conf", ["code_challenge_method": "plain"])
            )
            #expect(Flow.query(plain.location)["error"] == "invalid_request")
            // A wrong verifier (spent the code all the same).
            let c3 = try await code(Flow.parameters("conf"))
            #expect(
                try await Self.exchange(api, c3, verifier: Flow.verifier + "x").json["error"] as? String
                    == "invalid_grant"
            )
            #expect(try await Self.exchange(api, c3, verifier: Flow.verifier).status == 400)
        }
    }

    @Test("Code reuse, at once and after 30 s, revokes what the first use gave", arguments: Backend.available)
    func codeReuse(_ backend: Backend) async throws {
        try await Self.with(backend) { h, api, token in
            for wait in [0.0, 30] {
                let code = try #require(
                    Flow.query(try await Flow.authorize(api, token, Flow.parameters("conf")).location)["code"]
                )
                let first = try JSONDecoder().decode(
                    OIDCTokenResponse.self,
                    from: try await Self.exchange(api, code, verifier: Flow.verifier).body
                )
                h.clock.advance(wait)
                #expect(
                    try await Self.exchange(api, code, verifier: Flow.verifier).json["error"] as? String
                        == "invalid_grant"
                )
                #expect(try await api.call(.get, "/oauth2/userinfo", token: first.access_token).status == 401)
                #expect(try await Self.refresh(api, try #require(first.refresh_token)).status == 400)
            }
        }
    }

    @Test(
        "A refresh token reused, within one second, and after logout revokes its family",
        arguments: Backend.available
    )
    func refreshReuse(_ backend: Backend) async throws {
        try await Self.with(backend) { h, api, token in
            let tokens = try await Flow.tokens(api, token, "conf")
            let old = try #require(tokens.refresh_token)
            let rotated = try JSONDecoder().decode(OIDCTokenResponse.self, from: try await Self.refresh(api, old).body)
            // The same second (the clock has not moved): the old one again ends the family, the new one too.
            #expect(try await Self.refresh(api, old).json["error"] as? String == "invalid_grant")
            #expect(try await Self.refresh(api, try #require(rotated.refresh_token)).status == 400)
            #expect(try await api.call(.get, "/oauth2/userinfo", token: rotated.access_token).status == 401)
            // After signing out everywhere: refused.
            let other = try await Flow.tokens(api, token, "conf")
            #expect(try await api.call(.delete, "/v1/sessions", token: token).status == 204)
            // The revocation follows the sign-out at once, off its path: wait for the access token to end.
            var status = 200
            for _ in 0..<100 where status == 200 {
                try await Task.sleep(for: .milliseconds(50))
                status = try await api.call(.get, "/oauth2/userinfo", token: other.access_token).status
            }
            #expect(status == 401)
            let afterLogout = try await Self.refresh(api, try #require(other.refresh_token))
            #expect(afterLogout.json["error"] as? String == "invalid_grant")
            _ = h
        }
    }

    @Test("A refresh token reused after a server restart still revokes its family", arguments: Backend.available)
    func refreshReuseAfterRestart(_ backend: Backend) async throws {
        let location = try backend.freshLocation()
        let kept = Mutex<(old: String, new: String, access: String)?>(nil)
        try await Self.with(backend, location: location) { _, api, token in
            let tokens = try await Flow.tokens(api, token, "conf")
            let old = try #require(tokens.refresh_token)
            let rotated = try JSONDecoder().decode(OIDCTokenResponse.self, from: try await Self.refresh(api, old).body)
            kept.withLock { $0 = (old, rotated.refresh_token ?? "", rotated.access_token) }
        }
        // The same database, a new server (its storage closed and opened again, every service made anew).
        let tokens = try #require(kept.withLock { $0 })
        try await Self.with(backend, location: location, restarted: true) { _, api, _ in
            let before = try await api.call(.get, "/oauth2/userinfo", token: tokens.access)
            #expect(before.status == 200)
            let reused = try await Self.refresh(api, tokens.old)
            #expect(reused.json["error"] as? String == "invalid_grant")
            let newest = try await Self.refresh(api, tokens.new)
            #expect(newest.status == 400, "the family ended with the reuse")
            let after = try await api.call(.get, "/oauth2/userinfo", token: tokens.access)
            #expect(after.status == 401)
        }
    }

    @Test(
        "ZITADEL CVE-2024-32868: no code before every factor the client needs; the lockout holds",
        arguments: Backend.available
    )
    func factorsAndLockout(_ backend: Backend) async throws {
        try await Self.with(backend) { h, api, token in
            #expect(try await h.storage.addOIDCClient(Flow.client("strict", policy: .mfa, firstParty: true)))
            // A password alone does not meet mfa: stepped up, never a code; prompt=none says so.
            let asked = try await Flow.authorize(api, token, Flow.parameters("strict"))
            #expect(asked.action == .signIn && asked.reason == "step-up" && asked.location == nil, "\(asked)")
            let silent = try await Flow.authorize(api, token, Flow.parameters("strict", ["prompt": "none"]))
            #expect(
                Flow.query(silent.location)["error"] == "interaction_required"
                    && Flow.query(silent.location)["code"] == nil
            )
            // A bearer that is no session (a sign-in's pending binding, a made-up token) is nobody signed in.
            for bogus in ["csb_" + String(repeating: "A", count: 43), "cs_not_a_session"] {
                let answer = try await Flow.authorize(api, bogus, Flow.parameters("conf", ["prompt": "none"]))
                #expect(Flow.query(answer.location)["error"] == "login_required", "\(answer)")
            }
            // The lockout counts wherever the password is typed: locked by wrong passwords, the session is gone,
            // the provider gives nothing, and the right password does not sign in.
            for attempt in 1...5 {
                _ = try await api.signIn("oidcadv", "wrong password")
                if attempt == 3 { h.clock.advance(31 * 60) }  // past the delay the third sets
            }
            let locked = try await Flow.authorize(api, token, Flow.parameters("conf", ["prompt": "none"]))
            #expect(Flow.query(locked.location)["error"] == "login_required", "\(locked)")
            #expect(try await api.signIn("oidcadv").status != 201)
        }
    }

    @Test("Hydra #770: consent is the answer of the browser session that sends it", arguments: Backend.available)
    func consentBoundToSession(_ backend: Backend) async throws {
        try await Self.with(backend) { h, api, token in
            try await api.register("oidcmallory")
            let mallory = try await api.token("oidcmallory")
            #expect(try await h.storage.addOIDCClient(Flow.client("other")))
            // Alice is asked; mallory sends "Allow" for the same request: the code is mallory's, alice's consent
            // is not given, and alice is still asked.
            #expect(try await Flow.authorize(api, token, Flow.parameters("other")).action == .consent)
            let theirs = try await Flow.authorize(api, mallory, Flow.parameters("other"), consent: true)
            let code = try #require(Flow.query(theirs.location)["code"])
            let reply = try await Flow.form(
                api,
                "/oauth2/token",
                [
                    "grant_type": "authorization_code", "code": code, "redirect_uri": Flow.redirect,
                    "code_verifier": Flow.verifier,
                ],
                basic: ("other", "s3cret")
            )
            let tokens = try JSONDecoder().decode(OIDCTokenResponse.self, from: reply.body)
            let info = try await api.call(.get, "/oauth2/userinfo", token: tokens.access_token)
            #expect(info.json["preferred_username"] as? String == "oidcmallory")
            #expect(try await Flow.authorize(api, token, Flow.parameters("other")).action == .consent)
        }
    }

    @Test(
        "Tokens the server reads: alg none, HS256 with the public key, another audience, another issuer",
        arguments: Backend.available
    )
    func tokensRead(_ backend: Backend) async throws {
        try await Self.with(backend) { h, api, token in
            let hint = try #require(try await Flow.tokens(api, token, "conf").id_token)
            #expect(try await h.storage.addOIDCClient(Flow.client("other")))
            let parts = hint.split(separator: ".").map(String.init)
            let none = Base64URL(Array(#"{"alg":"none","typ":"JWT"}"#.utf8)).text + "." + parts[1] + "."
            let jwks = String(decoding: try await api.call(.get, "/oauth2/jwks").body, as: UTF8.self)
            let hsInput = Base64URL(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8)).text + "." + parts[1]
            let hs = HMAC<SHA256>.authenticationCode(
                for: Array(hsInput.utf8),
                using: SymmetricKey(data: Array(jwks.utf8))
            )
            let forged = hsInput + "." + Base64URL(Array(Data(hs))).text
            var claims = try OIDCPairingTests.claims(hint)
            claims["iss"] = "https://evil.example.com"
            let otherIssuer = [
                parts[0], Base64URL(Array(try JSONSerialization.data(withJSONObject: claims))).text, parts[2],
            ]
            .joined(separator: ".")
            // With prompt=none a hint that does not verify is refused; without, it is not used.
            for bad in [none, forged, otherIssuer] {
                let answer = try await Flow.authorize(
                    api,
                    token,
                    Flow.parameters("conf", ["prompt": "none", "id_token_hint": bad])
                )
                #expect(Flow.query(answer.location)["error"] == "invalid_request", "\(answer)")
                #expect(Flow.query(answer.location)["code"] == nil)
            }
            // Another client's ID token is no hint for this one.
            _ = try await Flow.authorize(api, token, Flow.parameters("other"), consent: true)
            let theirs = try await Flow.authorize(
                api,
                token,
                Flow.parameters("other", ["prompt": "none", "id_token_hint": hint])
            )
            #expect(Flow.query(theirs.location)["error"] == "invalid_request", "\(theirs)")
            // Logout reads the same way (the logout tests check the rest).
            for bad in [none, forged, otherIssuer] {
                let answer = try await Flow.logout(api, token, ["id_token_hint": bad])
                #expect(answer.action == .error)
            }
            // Expired access tokens are refused at userinfo.
            let live = try await Flow.tokens(api, token, "conf")
            h.clock.advance(OIDCService.accessTokenLifetime + 1)
            #expect(try await api.call(.get, "/oauth2/userinfo", token: live.access_token).status == 401)
        }
    }
}
