import CountersignCrypto
import Foundation
import SQLKit
import Synchronization
import Testing

@testable import CountersignServer

enum PasswordHasherParameters {
    static let stronger = PasswordHasher(memoryKiB: 2048, iterations: 2, parallelism: 1)
}

/// Registration, sign-in, sessions, re-authentication, settings and audit over HTTP, on SQLite and PostgreSQL.
@Suite(.closesStorage) struct AccountAPITests {
    /// Sign-up asking to be signed in answers with the first session (one captcha for both), audited as a
    /// sign-in; a refused sign-up starts none.
    @Test(arguments: Backend.available)
    func aSignUpThatAsksToBeSignedInAnswersWithASession(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            let body: [String: any Sendable] = [
                "username": "grace", "password": "correct horse", "name": "Grace", "lastname": "Hopper",
                "signIn": true,
            ]
            let r = try await api.call(.post, "/v1/accounts", json: body)
            #expect(r.status == 201, "\(String(decoding: r.body, as: UTF8.self))")
            let token = try #require(r.json["token"] as? String)
            #expect((r.json["account"] as? [String: Any])?["username"] as? String == "grace")
            let me = try await api.call(.get, "/v1/me", token: token)
            #expect(me.status == 200 && me.json["username"] as? String == "grace")
            let audit = try await api.call(.get, "/v1/me/audit", token: token)
            let kinds = (audit.json["events"] as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String }
            #expect(kinds.contains("account-created") && kinds.contains("sign-in"), "\(kinds)")
            // Taken: refused, and no session for anyone.
            let again = try await api.call(.post, "/v1/accounts", json: body)
            #expect(again.status == 409 && again.json["token"] == nil)
            #expect(try await h.count("sessions") == 1)
            // Without signIn, the Account as before.
            var plain = body
            plain["username"] = "ada"
            plain["signIn"] = false
            let account = try await api.call(.post, "/v1/accounts", json: plain)
            #expect(
                account.status == 201 && account.json["token"] == nil && account.json["username"] as? String == "ada"
            )
        }
    }

    @Test(arguments: Backend.available)
    func registerSignInMeSignOut(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            let r = try await api.register("Ada.L", "correct horse")
            #expect(r.status == 201, "\(String(decoding: r.body, as: UTF8.self))")
            #expect(r.json["username"] as? String == "ada.l")
            #expect(r.json["password"] == nil && r.json["passwordHash"] == nil)
            #expect(try await api.register("ADA.l", "another password").code == "username-taken", "case-insensitive")
            let s = try await api.signIn("ADA.L")
            #expect(s.status == 201)
            let token = try #require(s.json["token"] as? String)
            #expect(token.hasPrefix("cs_") && token.count == 46)
            #expect(s.json["expiresAt"] as? String != nil)
            let me = try await api.call(.get, "/v1/me", token: token)
            #expect(me.status == 200 && me.json["username"] as? String == "ada.l")
            // The token is stored only as its hash.
            #expect(try await h.store.session(tokenHash: token) == nil)
            #expect(try await h.store.session(tokenHash: TokenHash.hex(token)) != nil)
            #expect(try await api.call(.delete, "/v1/sessions/current", token: token).status == 204)
            let after = try await api.call(.get, "/v1/me", token: token)
            #expect(after.status == 401 && after.code == "unauthenticated" && after.isProblem)
        }
    }

    @Test(arguments: Backend.available)
    func registrationRules(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            for bad in [
                "ab", "-abc", "abc-", "a b c", "ädam", String(repeating: "a", count: 33), "abc/def", "\u{212A}elvin",
            ] {
                let r = try await api.register(bad)
                #expect(
                    r.status == 422 && r.code == "invalid-field" && r.json["field"] as? String == "username",
                    "\(bad)"
                )
            }
            #expect(try await api.register("short", "1234567").json["field"] as? String == "password", "7 characters")
            #expect(
                try await api.register("longpw", String(repeating: "x", count: 129)).json["field"] as? String
                    == "password"
            )
            #expect(
                try await api.register("samesame", "SAMESAME").json["field"] as? String == "password",
                "password = username"
            )
            #expect(try await api.register("eight", "12345678").status == 201, "8 characters is the minimum")
            let noName = try await api.call(
                .post,
                "/v1/accounts",
                json: ["username": "noname", "password": "correct horse", "name": "", "lastname": "x"]
            )
            #expect(noName.status == 422 && noName.json["field"] as? String == "name")
        }
    }

    @Test(arguments: Backend.available)
    func badInputIsA4xxProblemNeverA500(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            let cases: [(Data, String)] = [
                (Data("{not json".utf8), "malformed-request"),
                (Data("[]".utf8), "malformed-request"),
                (
                    Data("{\"username\": 5, \"password\": \"x\", \"name\": \"a\", \"lastname\": \"b\"}".utf8),
                    "malformed-request"
                ),
                (Data("{\"username\": \"abc\"}".utf8), "malformed-request"),
                (
                    Data("{\"username\": null, \"password\": \"x\", \"name\": \"a\", \"lastname\": \"b\"}".utf8),
                    "malformed-request"
                ),
                (Data(), "malformed-request"),
                (Data(repeating: 0x20, count: 70_000), "payload-too-large"),
            ]
            for (body, code) in cases {
                for path in ["/v1/accounts", "/v1/sessions"] {
                    let r = try await api.call(.post, path, raw: body, headers: [.contentType: "application/json"])
                    #expect(
                        (400..<500).contains(r.status) && r.code == code && r.isProblem,
                        "\(path) \(body.prefix(40)): \(r.status) \(r.code ?? "-")"
                    )
                }
            }
            let missing = try await api.call(
                .post,
                "/v1/sessions",
                raw: Data("{\"username\": \"abc\"}".utf8),
                headers: [.contentType: "application/json"]
            )
            #expect((missing.json["detail"] as? String)?.contains("password") == true)
            let xml = try await api.call(
                .post,
                "/v1/sessions",
                raw: Data("<a/>".utf8),
                headers: [.contentType: "application/xml"]
            )
            #expect(xml.status == 415 && xml.isProblem)
            let nowhere = try await api.call(.get, "/v1/nowhere")
            #expect(nowhere.status == 404 && nowhere.isProblem)
            let badAudit = try await api.call(.get, "/v1/me/audit?limit=abc", token: "cs_nothing")
            #expect(badAudit.status == 401, "authentication comes first")
            for token in [
                "", "cs_", "cs_" + String(repeating: "A", count: 43), "Basic abc", String(repeating: "x", count: 5000),
            ] {
                let r = try await api.call(.get, "/v1/me", token: token)
                #expect(r.status == 401 && r.isProblem)
            }
        }
    }

    @Test(arguments: Backend.available)
    func sessionsExpireIdleAndAbsolute(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("idle")
            let token = try await api.token("idle")
            h.clock.advance(29 * 60)
            #expect(try await api.call(.get, "/v1/me", token: token).status == 200)
            h.clock.advance(29 * 60)
            #expect(try await api.call(.get, "/v1/me", token: token).status == 200, "use keeps the session alive")
            h.clock.advance(31 * 60)
            #expect(try await api.call(.get, "/v1/me", token: token).status == 401, "idle for 31 minutes")
            // Used every 25 minutes: alive for exactly 12 hours, then gone however busy.
            let busy = try await api.token("idle")
            for step in 1...30 {
                h.clock.advance(25 * 60)
                let alive = step * 25 < 12 * 60
                #expect(
                    try await api.call(.get, "/v1/me", token: busy).status == (alive ? 200 : 401),
                    "after \(step * 25) minutes"
                )
            }
        }
    }

    @Test(arguments: Backend.available)
    func passwordChangeNeedsCurrentPasswordAndEndsOtherSessions(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("changer")
            let a = try await api.token("changer")
            let b = try await api.token("changer")
            let wrong = try await api.call(
                .put,
                "/v1/me/password",
                json: ["currentPassword": "not it at all", "newPassword": "a new password"],
                token: a
            )
            #expect(wrong.status == 403 && wrong.code == "wrong-password")
            let short = try await api.call(
                .put,
                "/v1/me/password",
                json: ["currentPassword": "correct horse", "newPassword": "short"],
                token: a
            )
            #expect(short.status == 422)
            #expect(
                try await api.call(
                    .put,
                    "/v1/me/password",
                    json: ["currentPassword": "correct horse", "newPassword": "a new password"],
                    token: a
                ).status == 204
            )
            #expect(try await api.call(.get, "/v1/me", token: a).status == 200, "this session stays")
            #expect(try await api.call(.get, "/v1/me", token: b).status == 401, "the other one ended")
            #expect(try await api.signIn("changer", "correct horse").status == 401)
            #expect(try await api.signIn("changer", "a new password").status == 201)
        }
    }

    @Test(arguments: Backend.available)
    func reauthenticationInterval(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("lockwhisper")
            let t = try await api.token("lockwhisper")
            #expect(
                try await api.call(.put, "/v1/me/settings", json: ["reauthIntervalMinutes": 7], token: t).status == 422
            )
            let set = try await api.call(.put, "/v1/me/settings", json: ["reauthIntervalMinutes": 5], token: t)
            #expect(set.status == 200 && set.json["reauthIntervalMinutes"] as? Int == 5)
            h.clock.advance(4 * 60)
            #expect(
                try await api.call(.put, "/v1/me/settings", json: ["reauthIntervalMinutes": 10], token: t).status == 200
            )
            h.clock.advance(11 * 60)
            let stale = try await api.call(.put, "/v1/me/settings", json: ["reauthIntervalMinutes": 30], token: t)
            #expect(
                stale.status == 401 && stale.code == "reauthentication-required"
                    && stale.json["intervalMinutes"] as? Int == 10
            )
            let pw = try await api.call(
                .put,
                "/v1/me/password",
                json: ["currentPassword": "correct horse", "newPassword": "another pass"],
                token: t
            )
            #expect(pw.code == "reauthentication-required")
            #expect(
                try await api.call(.post, "/v1/sessions/current/reauth", json: ["password": "wrong password"], token: t)
                    .code == "wrong-password"
            )
            #expect(
                try await api.call(.post, "/v1/sessions/current/reauth", json: ["password": "correct horse"], token: t)
                    .status == 204
            )
            #expect(
                try await api.call(.put, "/v1/me/settings", json: ["reauthIntervalMinutes": 0], token: t).status == 200
            )
            h.clock.advance(10 * 3600)
            let me = try await api.call(.get, "/v1/me", token: t)
            #expect(me.status == 401, "idle expiry still applies")
        }
    }

    @Test(arguments: Backend.available)
    func auditIsPerAccountNewestFirstAndPaginated(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("auditor")
            try await api.register("other")
            for _ in 0..<2 { _ = try await api.signIn("auditor", "wrong password") }
            let t = try await api.token("auditor")
            let o = try await api.token("other")
            let page = try await api.call(.get, "/v1/me/audit?limit=2", token: t, headers: [.userAgent: "test-agent/1"])
            #expect(page.status == 200)
            let events = try #require(page.json["events"] as? [[String: Any]])
            #expect(events.map { $0["outcome"] as? String } == ["success", "wrong-password"])
            #expect(events.allSatisfy { $0["kind"] as? String == "sign-in" && $0["address"] != nil && $0["at"] != nil })
            let next = try #require(page.json["next"] as? String)
            let rest = try #require(try await api.call(.get, next, token: t).json["events"] as? [[String: Any]])
            #expect(rest.map { $0["kind"] as? String } == ["sign-in", "account-created"])
            #expect(rest.first?["outcome"] as? String == "wrong-password")
            let theirs = try #require(
                try await api.call(.get, "/v1/me/audit", token: o).json["events"] as? [[String: Any]]
            )
            #expect(theirs.count == 2, "one user's token never reads another's audit: \(theirs)")
            #expect(try await api.call(.get, "/v1/me/audit?limit=0", token: t).status == 400)
            #expect(try await api.call(.get, "/v1/me/audit?before=-1", token: t).status == 400)
        }
    }

    /// Raising the Argon2id parameters takes effect for each account at its next successful sign-in.
    @Test(arguments: Backend.available)
    func outdatedHashesAreReplacedAtSignIn(_ backend: Backend) async throws {
        let weak = try await Harness.make(backend)
        try await weak.run { api in
            let created = try await api.register("rehash")
            #expect(created.status == 201)
        }
        let stronger = PasswordHasherParameters.stronger
        let strong = try await Harness.make(backend, location: weak.config.database) { $0.hasher = stronger }
        try await strong.run { api in
            let before = try #require(try await strong.store.account(username: "rehash")?.passwordHash)
            #expect(before.contains("m=1024,t=1"))
            #expect(try await api.signIn("rehash", "wrong password").status == 401)
            #expect(
                try await strong.store.account(username: "rehash")?.passwordHash == before,
                "a failure changes nothing"
            )
            #expect(try await api.signIn("rehash").status == 201)
            let after = try #require(try await strong.store.account(username: "rehash")?.passwordHash)
            #expect(after.contains("m=2048,t=2") && after != before)
            #expect(try await api.signIn("rehash").status == 201, "the new hash verifies")
        }
    }

    /// Two sign-ins with the same password race to rehash an outdated hash: the one whose compare-and-set
    /// loses finds a hash that its password verifies, and signs in too (not refused as superseded). A hash
    /// its password does not verify (a real change) still refuses it.
    @Test(arguments: Backend.available)
    func aRehashRaceLosesNoSignIn(_ backend: Backend) async throws {
        let weak = try await Harness.make(backend)
        try await weak.run { api in
            let created = try await api.register("racer")
            #expect(created.status == 201)
        }
        let stronger = PasswordHasherParameters.stronger
        let competing = Mutex<String?>(nil)
        let storage = Mutex<(any SQLDatabase)?>(nil)
        let strong = try await Harness.make(
            backend,
            location: weak.config.database,
            configure: { $0.hasher = stronger },
            wrapStore: { base in
                HookedStore(
                    base: base,
                    beforeFinish: { _ in },
                    beforeReplace: { id in
                        guard let hash = competing.withLock({ $0 }), let sql = storage.withLock({ $0 }) else { return }
                        try await sql.raw("UPDATE accounts SET password_hash = \(bind: hash) WHERE id = \(bind: id)")
                            .run()
                    }
                )
            }
        )
        let outdated = try #require(try await strong.storage.account(username: "racer")?.passwordHash)
        try await strong.run { _ in
            storage.withLock { $0 = strong.storage.sql }
            let origin = RequestOrigin(address: "192.0.2.5", userAgent: "")
            func signIn() async throws -> NewSession {
                let verified = try await strong.signIn.verifySignIn(
                    username: "racer",
                    password: "correct horse",
                    captcha: nil,
                    origin: origin
                )
                return try await strong.signIn.completeSignIn(verified)
            }
            // The other sign-in's rehash of the same password lands first.
            competing.withLock { $0 = try? stronger.hash(Array("correct horse".utf8)) }
            _ = try await signIn()
            let racer = try #require(try await strong.storage.account(username: "racer"))
            #expect(racer.passwordHash == competing.withLock { $0 }, "the winner's hash stays")

            // An outdated hash again, and this time another password lands first: superseded, no session.
            try await strong.storage.sql.raw(
                "UPDATE accounts SET password_hash = \(bind: outdated) WHERE id = \(bind: racer.id)"
            ).run()
            competing.withLock { $0 = try? stronger.hash(Array("another password".utf8)) }
            await #expect(throws: SignInError.invalidCredentials(delayedUntil: nil, locked: false)) {
                _ = try await signIn()
            }
            let sessions = try await strong.storage.sql.raw(
                "SELECT COUNT(*) AS n FROM sessions WHERE account_id = \(bind: racer.id)"
            ).first()?.decode(column: "n", as: Int.self)
            #expect(sessions == 1, "the first sign-in's only")
            #expect(
                try await MFAReauthTests.outcomes(strong, "racer").suffix(2) == [
                    "sign-in success", "sign-in refused-superseded",
                ]
            )
        }
    }

    @Test func registrationsArePerAddressLimited() async throws {
        let h = try await Harness.make(.sqlite) { $0.registrationsPerAddress = .init(capacity: 3, window: 3600) }
        try await h.run { api in
            #expect(try await api.register("x").status == 422, "a malformed request gives its token back")
            for i in 0..<3 { #expect(try await api.register("reg\(i)").status == 201) }
            let r = try await api.register("reg9")
            #expect(r.status == 429 && r.code == "rate-limited" && r.headers[.retryAfter] == "1200")
            h.clock.advance(1200)
            #expect(try await api.register("reg9").status == 201)
        }
    }

    @Test func storeDetailsTheAPIReliesOn() async throws {
        let h = try await Harness.make(.sqlite)
        guard case .sqlite(let path) = h.config.database else { return }
        var st = stat()
        #expect(stat(path, &st) == 0 && st.st_mode & 0o777 == 0o600, "the database file is private")
        try await h.run { api in
            let created = try await api.register("casuser")
            let id = try #require(created.json["id"] as? String)
            let hash = try #require(try await h.store.account(id: id)?.passwordHash)
            #expect(try await h.store.replacePasswordHash("not the hash", with: "x", accountID: id) == false)
            #expect(try await h.store.account(id: id)?.passwordHash == hash, "compare-and-set did not write")
            #expect(try await h.store.replacePasswordHash(hash, with: hash, accountID: id))
            // Refusals for an unknown name write an audit row like a real one, shown to no one.
            for _ in 0..<4 { _ = try await api.signIn("ghost-user", "wrong password") }
            let token = try await api.token("casuser")
            let mine = try await api.call(.get, "/v1/me/audit", token: token).json["events"] as? [[String: Any]]
            #expect(mine?.count == 2)
            #expect(try await h.store.auditEvents(accountID: "", before: nil, limit: 100).count == 4)
        }
        #expect(AddressThrottle.key("192.0.2.7") == "192.0.2.7")
        #expect(AddressThrottle.key("2001:db8:1:2:aaaa::1") == AddressThrottle.key("2001:db8:1:2:ffff:ffff:ffff:ffff"))
        #expect(AddressThrottle.key("2001:db8:1:2::1") != AddressThrottle.key("2001:db8:1:3::1"))
    }

    /// RFC 9110: the auth scheme is case-insensitive. No cache may keep an API answer, the token's above all.
    @Test func bearerSchemeAnyCaseAndNoStore() async throws {
        let h = try await Harness.make(.sqlite)
        try await h.run { api in
            #expect(try await api.register("schemer").headers[.cacheControl] == "no-store")
            let signIn = try await api.signIn("schemer")
            #expect(
                signIn.status == 201 && signIn.headers[.cacheControl] == "no-store",
                "the answer that carries the token"
            )
            let token = try #require(signIn.json["token"] as? String)
            for header in ["Bearer \(token)", "bearer \(token)", "BEARER \(token)", "bEaReR  \(token)"] {
                let r = try await api.call(.get, "/v1/me", headers: [.authorization: header])
                #expect(r.status == 200 && r.headers[.cacheControl] == "no-store", "\(header.prefix(8))")
            }
            for header in ["Basic \(token)", "Bearer", "Bearer ", "Bearer\(token)", token, "Bearer x\(token)"] {
                #expect(
                    try await api.call(.get, "/v1/me", headers: [.authorization: header]).status == 401,
                    "\(header.prefix(10))"
                )
            }
        }
        #expect(APIRoutes.bearerToken("Bearer abc") == "abc" && APIRoutes.bearerToken("bearer   abc") == "abc")
        #expect(
            APIRoutes.bearerToken("Bearerabc") == nil && APIRoutes.bearerToken("Token abc") == nil
                && APIRoutes.bearerToken(nil) == nil
        )
    }

    /// The periodic purge deletes exactly what is past its time: sessions past their idle or absolute
    /// lifetime, spent captchas past expiry, unknown-username audit rows older than a day.
    @Test(arguments: Backend.available)
    func purgeDeletesOnlyWhatExpired(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("purged")
            let account = try #require(try await h.store.account(username: "purged"))
            let now = h.clock.now()
            func session(_ name: String, created: TimeInterval, used: TimeInterval) -> SessionRecord {
                SessionRecord(
                    tokenHash: name,
                    accountID: account.id,
                    createdAt: now.addingTimeInterval(created),
                    lastUsedAt: now.addingTimeInterval(used),
                    authenticatedAt: now.addingTimeInterval(created),
                    expiresAt: now.addingTimeInterval(created + 12 * 3600),
                    address: "192.0.2.1",
                    userAgent: "t"
                )
            }
            try await h.store.createSession(session("fresh", created: -3600, used: -60))
            try await h.store.createSession(session("idle", created: -3600, used: -31 * 60))
            try await h.store.createSession(session("old", created: -12 * 3600 - 1, used: -60))
            #expect(try await h.store.spendCaptcha(challenge: "spent-live", expiresAt: now.addingTimeInterval(60)))
            #expect(try await h.store.spendCaptcha(challenge: "spent-dead", expiresAt: now.addingTimeInterval(-1)))
            try await h.store.record(
                accountID: "",
                kind: "sign-in",
                outcome: "wrong-password",
                address: "a",
                userAgent: "",
                at: now.addingTimeInterval(-86_401)
            )
            try await h.store.record(
                accountID: "",
                kind: "sign-in",
                outcome: "wrong-password",
                address: "b",
                userAgent: "",
                at: now.addingTimeInterval(-3600)
            )
            try await h.store.record(
                accountID: account.id,
                kind: "sign-in",
                outcome: "success",
                address: "c",
                userAgent: "",
                at: now.addingTimeInterval(-90 * 86_400)
            )

            try await h.store.purgeExpired(now: now, idle: 30 * 60)

            #expect(try await h.store.session(tokenHash: "fresh") != nil)
            #expect(try await h.store.session(tokenHash: "idle") == nil, "31 minutes unused")
            #expect(try await h.store.session(tokenHash: "old") == nil, "past 12 hours")
            #expect(
                try await h.store.spendCaptcha(challenge: "spent-live", expiresAt: now) == false,
                "a live challenge stays spent"
            )
            #expect(
                try await h.store.spendCaptcha(challenge: "spent-dead", expiresAt: now),
                "an expired one's record is gone"
            )
            #expect(try await h.store.auditEvents(accountID: "", before: nil, limit: 10).map(\.address) == ["b"])
            #expect(
                try await h.store.auditEvents(accountID: account.id, before: nil, limit: 10).map(\.address).contains(
                    "c"
                ),
                "an account's own history is kept"
            )
        }
    }

    @Test(arguments: Backend.available)
    func metricsOpenAPIAndHealth(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.metricsToken = "metrics-token-0123456789" }
        try await h.run { api in
            #expect(try await api.call(.get, "/healthz").status == 200)
            try await api.register("metric")
            _ = try await api.signIn("metric", "wrong password")
            // Issue 33: sign-in outcomes are not for anonymous clients.
            for token in [nil, "metrics-token-012345678", "metrics-token-0123456789x", "csa_nosuchsession"] {
                let refused = try await api.call(.get, "/metrics", token: token)
                #expect(refused.status == 401 && refused.isProblem && refused.code == "unauthenticated")
                #expect(refused.headers[.wwwAuthenticate] == "Bearer realm=\"metrics\"")
                #expect(!String(decoding: refused.body, as: UTF8.self).contains("countersign_sign_ins_total"))
            }
            let m = String(
                decoding: try await api.call(.get, "/metrics", token: "metrics-token-0123456789").body,
                as: UTF8.self
            )
            #expect(m.contains("countersign_sign_ins_total{outcome=\"invalid-credentials\"}"), "\(m.prefix(500))")
            let doc = try await api.call(.get, "/openapi.yaml")
            #expect(doc.status == 200 && String(decoding: doc.body, as: UTF8.self).hasPrefix("openapi: 3.1"))
        }
    }

    /// Without a metrics token the route is off, whatever is sent.
    @Test func metricsAreOffWithoutAToken() async throws {
        let h = try await Harness.make(.sqlite)
        try await h.run { api in
            for token in [nil, "anything-at-all-here"] {
                let off = try await api.call(.get, "/metrics", token: token)
                #expect(
                    off.status == 404 && off.isProblem
                        && String(describing: off.json["detail"]).contains("--metrics-token-file")
                )
            }
        }
    }
}
