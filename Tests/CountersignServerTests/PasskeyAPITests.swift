import CountersignAPI
import CountersignCrypto
import CountersignTestSupport
import Foundation
import Testing

@testable import CountersignServer

/// Passkeys over HTTP, on both backends: registration, a discoverable sign-in, the second factor of a
/// password sign-in, re-authentication, renaming and removing; and every refusal counted and audited
/// as a wrong password is.
@Suite(.closesStorage) struct PasskeyAPITests {
    static let origin = "http://localhost:8080"

    /// Registers a new passkey for the account of `token`; returns it and its summary.
    static func addPasskey(
        _ api: API,
        _ token: String,
        name: String = "Laptop",
        backupEligible: Bool = false
    ) async throws -> (SoftAuthenticator, [String: Any]) {
        let options = try await api.call(.post, "/v1/me/passkeys/options", token: token)
        #expect(options.status == 201, "\(options.status) \(options.json)")
        let publicKey = try #require(options.json["publicKey"] as? [String: Any])
        let challenge = try #require((publicKey["challenge"] as? String).flatMap { Base64URL(text: $0) }).bytes
        let auth = SoftAuthenticator(backupEligible: backupEligible)
        let r = auth.register(rpID: "localhost", challenge: challenge, origin: origin)
        let ceremony = try #require(options.json["ceremonyId"] as? String)
        let added = try await api.call(
            .post,
            "/v1/me/passkeys",
            json: [
                "ceremonyId": ceremony, "name": name,
                "credential": [
                    "id": Base64URL(auth.credentialID).text, "rawId": Base64URL(auth.credentialID).text,
                    "type": "public-key",
                    "response": [
                        "clientDataJSON": Base64URL(r.clientDataJSON).text,
                        "attestationObject": Base64URL(r.attestationObject).text, "transports": ["internal"],
                    ] as [String: any Sendable],
                ] as [String: any Sendable],
            ],
            token: token
        )
        #expect(added.status == 201, "\(added.status) \(added.json)")
        return (auth, added.json)
    }

    /// Starts an assertion at `optionsPath` and answers it at `finishPath` with `auth`, bent by the
    /// arguments; returns the options and the answer.
    static func assert(
        _ api: API,
        _ auth: inout SoftAuthenticator,
        options optionsPath: String,
        finish finishPath: String,
        token: String? = nil,
        userHandle: [UInt8]?,
        flags: UInt8? = nil,
        origin: String = origin,
        flipSignature: Bool = false,
        replay: [String: any Sendable]? = nil,
        extensionResults: [String: any Sendable]? = nil,
        beforeAnswering: () -> Void = {}
    ) async throws -> (options: API.Reply, reply: API.Reply, body: [String: any Sendable]) {
        let options = try await api.call(.post, optionsPath, token: token)
        beforeAnswering()
        guard options.status == 201, let publicKey = options.json["publicKey"] as? [String: Any],
            let challenge = (publicKey["challenge"] as? String).flatMap({ Base64URL(text: $0) })?.bytes,
            let ceremony = options.json["ceremonyId"] as? String
        else { return (options, options, [:]) }
        var a = auth.assert(rpID: "localhost", challenge: challenge, origin: origin, flags: flags)
        if flipSignature { a.signature[a.signature.count - 3] ^= 0x01 }
        var response: [String: any Sendable] = [
            "clientDataJSON": Base64URL(a.clientDataJSON).text,
            "authenticatorData": Base64URL(a.authenticatorData).text,
            "signature": Base64URL(a.signature).text,
        ]
        if let userHandle { response["userHandle"] = Base64URL(userHandle).text }
        var credential: [String: any Sendable] = [
            "id": Base64URL(auth.credentialID).text, "rawId": Base64URL(auth.credentialID).text,
            "type": "public-key", "response": response,
        ]
        if let extensionResults { credential["clientExtensionResults"] = extensionResults }
        let body: [String: any Sendable] = replay ?? ["ceremonyId": ceremony, "credential": credential]
        return (options, try await api.call(.post, finishPath, json: body, token: token), body)
    }

    static func audit(_ api: API, _ token: String) async throws -> [String] {
        let events = try #require(
            try await api.call(.get, "/v1/me/audit", token: token).json["events"] as? [[String: Any]]
        )
        return events.map { "\($0["kind"] ?? "") \($0["outcome"] ?? "")" }
    }

    static func handle(_ h: Harness, _ username: String) async throws -> [UInt8] {
        let account = try #require(try await h.storage.account(username: username))
        return try await h.storage.userHandle(accountID: account.id, candidate: [])
    }

    /// Concurrent answers to one registration ceremony: whatever their number, one is judged. Eight from
    /// the wrong origin give one refusal (and one audit row), the rest 409; then eight good ones from
    /// eight authenticators store one passkey, the rest 409.
    @Test(arguments: Backend.available)
    func concurrentAnswersToOneRegistrationAreJudgedOnce(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("pkonce")
            let token = try await api.token("pkonce")
            for (round, origin) in [(0, "http://evil.example"), (1, Self.origin)] {
                let options = try await api.call(.post, "/v1/me/passkeys/options", token: token)
                let publicKey = try #require(options.json["publicKey"] as? [String: Any])
                let challenge = try #require((publicKey["challenge"] as? String).flatMap { Base64URL(text: $0) }).bytes
                let ceremony = try #require(options.json["ceremonyId"] as? String)
                let bodies: [[String: any Sendable]] = (0..<8).map { i in
                    let auth = SoftAuthenticator()
                    let r = auth.register(rpID: "localhost", challenge: challenge, origin: origin)
                    return [
                        "ceremonyId": ceremony, "name": "Key \(round)-\(i)",
                        "credential": [
                            "id": Base64URL(auth.credentialID).text, "rawId": Base64URL(auth.credentialID).text,
                            "type": "public-key",
                            "response": [
                                "clientDataJSON": Base64URL(r.clientDataJSON).text,
                                "attestationObject": Base64URL(r.attestationObject).text,
                            ] as [String: any Sendable],
                        ] as [String: any Sendable],
                    ]
                }
                let answers = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                    for body in bodies {
                        group.addTask {
                            let r = try await api.call(.post, "/v1/me/passkeys", json: body, token: token)
                            return (r.status, r.code)
                        }
                    }
                    return try await group.reduce(into: [(Int, String?)]()) { $0.append($1) }
                }
                let spent = answers.filter { $0.0 == 409 && $0.1 == "passkey-ceremony-invalid" }.count
                #expect(spent == 7, "round \(round): \(answers)")
                if round == 0 {
                    #expect(answers.filter { $0.0 == 422 }.count == 1, "\(answers)")
                } else {
                    #expect(answers.filter { $0.0 == 201 }.count == 1, "\(answers)")
                }
            }
            let list = try await api.call(.get, "/v1/me/passkeys", token: token).json["passkeys"] as? [[String: Any]]
            #expect(list?.count == 1)
            let audit = try await Self.audit(api, token)
            #expect(audit.filter { $0 == "passkey refused" }.count == 1, "\(audit)")
            #expect(audit.filter { $0 == "passkey created" }.count == 1, "\(audit)")
        }
    }

    /// Issue 33: the key gate's secret is the PRF output, which a client must never send. Creation asks
    /// for no PRF evaluation (only whether there is one), and an answer carrying `prf.results` is refused
    /// (422 `prf-results`) before anything is judged, on registration and on every assertion path, while
    /// `prf.enabled` alone is accepted.
    @Test(arguments: Backend.available)
    func answersCarryingAPRFOutputAreRefused(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            // Paired with an authenticator, so a password sign-in asks for a second factor.
            let (token, _) = try await MFACodeOnlyTests.paired(api, "pkprf")
            let output = Base64URL([UInt8](repeating: 0x5A, count: 32)).text
            let leaking: [String: any Sendable] = [
                "prf": ["enabled": true, "results": ["first": output]] as [String: any Sendable]
            ]
            func isRefused(_ r: API.Reply) -> Bool {
                r.status == 422 && r.code == "passkey-refused" && r.json["reason"] as? String == "prf-results"
                    && r.isProblem
            }
            // Registration: the options ask for no evaluation.
            let options = try await api.call(.post, "/v1/me/passkeys/options", token: token)
            let publicKey = try #require(options.json["publicKey"] as? [String: Any])
            let extensions = try #require(publicKey["extensions"] as? [String: Any])
            #expect((extensions["prf"] as? [String: Any])?.isEmpty == true, "\(extensions)")
            let challenge = try #require((publicKey["challenge"] as? String).flatMap { Base64URL(text: $0) }).bytes
            let ceremony = try #require(options.json["ceremonyId"] as? String)
            var auth = SoftAuthenticator()
            let r = auth.register(rpID: "localhost", challenge: challenge, origin: Self.origin)
            func registration(_ results: [String: any Sendable]) -> [String: any Sendable] {
                [
                    "ceremonyId": ceremony, "name": "Laptop",
                    "credential": [
                        "id": Base64URL(auth.credentialID).text, "rawId": Base64URL(auth.credentialID).text,
                        "type": "public-key", "clientExtensionResults": results,
                        "response": [
                            "clientDataJSON": Base64URL(r.clientDataJSON).text,
                            "attestationObject": Base64URL(r.attestationObject).text,
                        ] as [String: any Sendable],
                    ] as [String: any Sendable],
                ]
            }
            let refused = try await api.call(.post, "/v1/me/passkeys", json: registration(leaking), token: token)
            #expect(isRefused(refused), "\(refused.status) \(refused.json)")
            #expect(
                try await h.storage.passkeys(accountID: try #require(try await h.storage.account(username: "pkprf")).id)
                    .isEmpty
            )
            // The same ceremony, answered without the output: accepted (the refusal judged nothing).
            let harmless: [String: any Sendable] = [
                "prf": ["enabled": true] as [String: any Sendable], "credProps": ["rk": true] as [String: any Sendable],
            ]
            let added = try await api.call(.post, "/v1/me/passkeys", json: registration(harmless), token: token)
            #expect(added.status == 201, "\(added.status) \(added.json)")
            // Every assertion path.
            let handle = try await Self.handle(h, "pkprf")
            let signIn = try await Self.assert(
                api,
                &auth,
                options: "/v1/sessions/passkey/options",
                finish: "/v1/sessions/passkey",
                userHandle: handle,
                extensionResults: leaking
            )
            #expect(isRefused(signIn.reply), "\(signIn.reply.status) \(signIn.reply.json)")
            let reauth = try await Self.assert(
                api,
                &auth,
                options: "/v1/sessions/current/reauth/passkey/options",
                finish: "/v1/sessions/current/reauth/passkey",
                token: token,
                userHandle: handle,
                extensionResults: leaking
            )
            #expect(isRefused(reauth.reply), "\(reauth.reply.status) \(reauth.reply.json)")
            // A second factor: a password sign-in of an account with a passkey opens a transaction.
            let started = try await api.call(
                .post,
                "/v1/sessions",
                json: ["username": "pkprf", "password": "correct horse", "secondFactor": "code"]
            )
            if let id = (started.json["transaction"] as? [String: Any])?["id"] as? String,
                let binding = started.json["binding"] as? String
            {
                let second = try await Self.assert(
                    api,
                    &auth,
                    options: "/v1/mfa/transactions/\(id)/passkey/options",
                    finish: "/v1/mfa/transactions/\(id)/passkey",
                    token: binding,
                    userHandle: handle,
                    extensionResults: leaking
                )
                #expect(isRefused(second.reply), "\(second.reply.status) \(second.reply.json)")
            } else {
                Issue.record("no transaction: \(started.status) \(started.json)")
            }
            // Still usable: the same paths with the output left out succeed.
            let clean = try await Self.assert(
                api,
                &auth,
                options: "/v1/sessions/passkey/options",
                finish: "/v1/sessions/passkey",
                userHandle: handle,
                extensionResults: ["prf": ["enabled": true] as [String: any Sendable]]
            )
            #expect(clean.reply.status == 201, "\(clean.reply.json)")
        }
        await h.close()
    }

    @Test(arguments: Backend.available)
    func aDiscoverableSignInGivesAFullSessionOnce(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("pkada")
            let token = try await api.token("pkada")
            var (auth, summary) = try await Self.addPasskey(api, token)
            #expect(summary["name"] as? String == "Laptop" && summary["synced"] as? Bool == false)
            let handle = try await Self.handle(h, "pkada")
            let (options, signedIn, body) = try await Self.assert(
                api,
                &auth,
                options: "/v1/sessions/passkey/options",
                finish: "/v1/sessions/passkey",
                userHandle: handle
            )
            let publicKey = try #require(options.json["publicKey"] as? [String: Any])
            #expect((publicKey["allowCredentials"] as? [Any])?.isEmpty == true, "discoverable: no list")
            #expect(
                publicKey["userVerification"] as? String == "required" && publicKey["rpId"] as? String == "localhost"
            )
            #expect(signedIn.status == 201, "\(signedIn.json)")
            let session = try #require(signedIn.json["token"] as? String)
            #expect(try await api.call(.get, "/v1/me", token: session).json["username"] as? String == "pkada")
            // Two factors: the new session may change factors at once.
            #expect(try await api.call(.post, "/v1/me/passkeys/options", token: session).status == 201)
            // The same answer again: the ceremony was spent.
            let replayed = try await api.call(.post, "/v1/sessions/passkey", json: body)
            #expect(replayed.status == 409 && replayed.code == "passkey-ceremony-invalid")
            let list = try #require(
                try await api.call(.get, "/v1/me/passkeys", token: session).json["passkeys"] as? [[String: Any]]
            )
            #expect(list.count == 1 && list[0]["lastUsedAt"] is String)
            #expect(try await Self.audit(api, session).contains("sign-in success-passkey"))
            #expect(try await Self.audit(api, session).contains("passkey created"))
            // Removing the passkey (from the password's session) ends the session it signed in.
            let id = try #require(summary["id"] as? String)
            #expect(try await api.call(.delete, "/v1/me/passkeys/\(id)", token: token).status == 204)
            #expect(try await api.call(.get, "/v1/me", token: session).status == 401)
            #expect(try await api.call(.get, "/v1/me", token: token).status == 200)
        }
        await h.close()
    }

    @Test(arguments: Backend.available)
    func refusedAssertionsSayWhyAndCountTowardTheLock(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("pkbob")
            let token = try await api.token("pkbob")
            var (auth, _) = try await Self.addPasskey(api, token)
            let handle = try await Self.handle(h, "pkbob")
            func signIn(
                _ a: inout SoftAuthenticator,
                userHandle: [UInt8]? = handle,
                flags: UInt8? = nil,
                origin: String = Self.origin,
                flip: Bool = false
            ) async throws -> API.Reply {
                try await Self.assert(
                    api,
                    &a,
                    options: "/v1/sessions/passkey/options",
                    finish: "/v1/sessions/passkey",
                    userHandle: userHandle,
                    flags: flags,
                    origin: origin,
                    flipSignature: flip
                ).reply
            }
            // A stranger's passkey: nothing to count against, and audited under no account.
            var stranger = SoftAuthenticator()
            let unknown = try await signIn(&stranger)
            #expect(unknown.status == 422 && unknown.json["reason"] as? String == "unknown-credential")
            // No user handle in a discoverable sign-in: refused.
            let noHandle = try await signIn(&auth, userHandle: nil)
            #expect(noHandle.status == 422 && noHandle.json["reason"] as? String == "unknown-credential")
            // User presence without verification: refused.
            let noUV = try await signIn(&auth, flags: 0x01)
            #expect(noUV.status == 422 && noUV.json["reason"] as? String == "authenticator", "\(noUV.json)")
            // The third failure delays the account, as a third wrong password would.
            let wrongOrigin = try await signIn(&auth, origin: "http://evil.example")
            #expect(wrongOrigin.status == 429 && wrongOrigin.code == "sign-in-delayed", "\(wrongOrigin.json)")
            // While delayed, even a good assertion gets nothing.
            let good = try await signIn(&auth)
            #expect(good.status == 429 && good.code == "sign-in-delayed")
            h.clock.advance(31 * 60)
            let flipped = try await signIn(&auth, flip: true)
            #expect(flipped.status == 429, "the 4th failure delays again: \(flipped.json)")
            h.clock.advance(31 * 60)
            let locked = try await signIn(&auth, flip: true)
            #expect(locked.status == 423 && locked.code == "account-locked", "\(locked.json)")
            #expect(try await signIn(&auth).status == 423, "a lock ends passkey sign-ins too")
            // The lock ended every session, the one that added the passkey included.
            #expect(try await api.call(.get, "/v1/me", token: token).status == 401)
            let account = try #require(try await h.storage.account(username: "pkbob"))
            let events = try await h.storage.auditEvents(accountID: account.id, before: nil, limit: 50)
            // Each refusal in the words password sign-ins use: the one that set the delay or lock says so, and
            // an answer the delay or lock refused unchecked is recorded too.
            let outcomes = events.filter { $0.kind == "sign-in" }.map(\.outcome)
            for (outcome, count) in [
                ("wrong-passkey", 2), ("wrong-passkey-delayed", 2), ("wrong-passkey-locked", 1),
                ("refused-delayed", 1), ("refused-locked", 1),
            ] {
                #expect(outcomes.filter { $0 == outcome }.count == count, "\(outcome): \(outcomes)")
            }
            let anonymous = try await h.storage.auditEvents(accountID: "", before: nil, limit: 50)
            #expect(anonymous.contains { $0.kind == "sign-in" && $0.outcome == "wrong-passkey" })
        }
        await h.close()
    }

    @Test(arguments: Backend.available)
    func aCopiedDeviceBoundPasskeyIsReportedAndAudited(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("pkclone")
            let token = try await api.token("pkclone")
            var (auth, _) = try await Self.addPasskey(api, token)
            let handle = try await Self.handle(h, "pkclone")
            var copy = auth
            let first = try await Self.assert(
                api,
                &auth,
                options: "/v1/sessions/passkey/options",
                finish: "/v1/sessions/passkey",
                userHandle: handle
            )
            #expect(first.reply.status == 201)
            // The copy signs with the same counter value the original just used.
            let cloned = try await Self.assert(
                api,
                &copy,
                options: "/v1/sessions/passkey/options",
                finish: "/v1/sessions/passkey",
                userHandle: handle
            )
            #expect(cloned.reply.status == 422 && cloned.reply.json["reason"] as? String == "counter")
            let detail = cloned.reply.json["detail"] as? String ?? ""
            let digits = detail.unicodeScalars.filter { ("0"..."9").contains($0) }
            #expect(digits.isEmpty, "the counts stay out of the answer: \(detail)")
            let session = try #require(first.reply.json["token"] as? String)
            let audit = try await Self.audit(api, session)
            #expect(audit.contains("sign-in passkey-counter-not-increasing") && audit.contains("sign-in wrong-passkey"))
            // A synced passkey (backup eligible) keeps a zero counter: no clone report.
            var synced = try await Self.addPasskey(api, session, name: "Synced", backupEligible: true).0
            for _ in 0..<2 {
                let r = try await Self.assert(
                    api,
                    &synced,
                    options: "/v1/sessions/passkey/options",
                    finish: "/v1/sessions/passkey",
                    userHandle: handle
                )
                #expect(r.reply.status == 201, "\(r.reply.json)")
            }
        }
        await h.close()
    }

    @Test(arguments: Backend.available)
    func aPasskeyReauthenticatesInPlaceOfThePassword(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("pkre")
            try await api.register("pkother")
            let token = try await api.token("pkre")
            let other = try await api.token("pkother")
            var (auth, summary) = try await Self.addPasskey(api, token)
            var (otherAuth, _) = try await Self.addPasskey(api, other)
            let reauth = (
                options: "/v1/sessions/current/reauth/passkey/options", finish: "/v1/sessions/current/reauth/passkey"
            )
            h.clock.advance(11 * 60)
            let stale = try await api.call(.post, "/v1/me/passkeys/options", token: token)
            #expect(stale.status == 401 && stale.code == "reauthentication-required", "\(stale.json)")
            // Another account's passkey does not re-authenticate this session.
            let foreign = try await Self.assert(
                api,
                &otherAuth,
                options: reauth.options,
                finish: reauth.finish,
                token: token,
                userHandle: nil
            )
            #expect(foreign.reply.status == 422 && foreign.reply.json["reason"] as? String == "unknown-credential")
            // Nor does this session's ceremony answered from another session of the same account.
            let second = try await api.token("pkre")
            h.clock.advance(11 * 60)
            let options = try await api.call(.post, reauth.options, token: token)
            let mine = try #require(options.json["ceremonyId"] as? String)
            let allow = try #require(
                (options.json["publicKey"] as? [String: Any])?["allowCredentials"] as? [[String: Any]]
            )
            #expect(allow.map { $0["id"] as? String } == [Base64URL(auth.credentialID).text])
            let challenge = try #require(
                ((options.json["publicKey"] as? [String: Any])?["challenge"] as? String).flatMap { Base64URL(text: $0) }
            ).bytes
            let a = auth.assert(rpID: "localhost", challenge: challenge, origin: Self.origin)
            let body: [String: any Sendable] = [
                "ceremonyId": mine,
                "credential": [
                    "id": Base64URL(auth.credentialID).text, "rawId": Base64URL(auth.credentialID).text,
                    "type": "public-key",
                    "response": [
                        "clientDataJSON": Base64URL(a.clientDataJSON).text,
                        "authenticatorData": Base64URL(a.authenticatorData).text,
                        "signature": Base64URL(a.signature).text,
                    ] as [String: any Sendable],
                ] as [String: any Sendable],
            ]
            let crossed = try await api.call(.post, reauth.finish, json: body, token: second)
            #expect(crossed.status == 409 && crossed.code == "passkey-ceremony-invalid")
            let good = try await Self.assert(
                api,
                &auth,
                options: reauth.options,
                finish: reauth.finish,
                token: token,
                userHandle: nil
            )
            #expect(good.reply.status == 204, "\(good.reply.json)")
            #expect(try await api.call(.post, "/v1/me/passkeys/options", token: token).status == 201)
            #expect(try await Self.audit(api, token).contains("reauth success-passkey"))
            // Starts are limited per account: 30 a minute; another account's are its own.
            var limited = 0
            for _ in 0..<31 {
                if try await api.call(.post, reauth.options, token: token).status == 429 { limited += 1 }
            }
            #expect(limited >= 1, "the 31st start in a minute")
            #expect(try await api.call(.post, reauth.options, token: other).status != 429)
            h.clock.advance(61)
            // An account without passkeys is told so.
            try await api.register("pknone")
            let none = try await api.call(.post, reauth.options, token: try await api.token("pknone"))
            #expect(none.status == 409 && none.code == "no-passkeys")
            // Rename, then remove (recent authentication first), then it signs nothing in.
            let id = try #require(summary["id"] as? String)
            let renamed = try await api.call(
                .patch,
                "/v1/me/passkeys/\(id)",
                json: ["name": " Work key "],
                token: token
            )
            #expect(renamed.status == 200 && renamed.json["name"] as? String == "Work key")
            #expect(
                try await api.call(.patch, "/v1/me/passkeys/\(id)", json: ["name": ""], token: token).code
                    == "invalid-field"
            )
            #expect(
                try await api.call(.patch, "/v1/me/passkeys/\(id)", json: ["name": "x"], token: other).status == 404
            )
            let otherNow = try await api.token("pkother")
            #expect(try await api.call(.delete, "/v1/me/passkeys/\(id)", token: otherNow).status == 404)
            h.clock.advance(11 * 60)
            let notYet = try await api.call(.delete, "/v1/me/passkeys/\(id)", token: token)
            #expect(notYet.status == 401 && notYet.code == "reauthentication-required")
            let again = try await Self.assert(
                api,
                &auth,
                options: reauth.options,
                finish: reauth.finish,
                token: token,
                userHandle: nil
            )
            #expect(again.reply.status == 204)
            #expect(try await api.call(.delete, "/v1/me/passkeys/\(id)", token: token).status == 204)
            #expect(try await api.call(.get, "/v1/me/passkeys", token: token).json["passkeys"] as? [Any] != nil)
            #expect(
                (try await api.call(.get, "/v1/me/passkeys", token: token).json["passkeys"] as? [Any])?.isEmpty == true
            )
            let audit = try await Self.audit(api, token)
            #expect(audit.contains("passkey renamed") && audit.contains("passkey removed"))
            _ = summary
        }
        await h.close()
    }

    @Test(arguments: Backend.available)
    func aPasskeyIsASecondFactorAfterThePassword(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            let (session, _) = try await MFACodeOnlyTests.paired(api, "pkmfa")
            var (auth, _) = try await Self.addPasskey(api, session)
            let begun = try await api.call(
                .post,
                "/v1/sessions",
                json: ["username": "pkmfa", "password": "correct horse", "secondFactor": "code"]
            )
            #expect(begun.status == 202)
            let tx = try #require(begun.json["transaction"] as? [String: Any])
            #expect((tx["methods"] as? [String])?.contains("passkey") == true, "\(tx)")
            let id = try #require(tx["id"] as? String)
            let binding = try #require(begun.json["binding"] as? String)
            let paths = (
                options: "/v1/mfa/transactions/\(id)/passkey/options", finish: "/v1/mfa/transactions/\(id)/passkey"
            )
            // Without the binding secret: nothing.
            #expect(try await api.call(.post, paths.options).status == 401)
            // A wrong answer costs one attempt.
            let wrong = try await Self.assert(
                api,
                &auth,
                options: paths.options,
                finish: paths.finish,
                token: binding,
                userHandle: nil,
                flipSignature: true
            )
            #expect(wrong.reply.status == 200 && wrong.reply.json["attemptsLeft"] as? Int == 4, "\(wrong.reply.json)")
            let good = try await Self.assert(
                api,
                &auth,
                options: paths.options,
                finish: paths.finish,
                token: binding,
                userHandle: nil
            )
            #expect(good.reply.json["status"] as? String == "COMPLETED", "\(good.reply.json)")
            let collected = try await api.call(.post, "/v1/mfa/transactions/\(id)/session", token: binding)
            #expect(collected.status == 201)
            let token = try #require(collected.json["token"] as? String)
            let audit = try await Self.audit(api, token)
            #expect(audit.contains("sign-in success-passkey") && audit.contains("mfa wrong-passkey"), "\(audit)")
            // A finished transaction starts no further ceremony.
            #expect(try await api.call(.post, paths.options, token: binding).status == 409)

            // The account has a second factor, yet a user-verified passkey alone is both: a session at once.
            let discoverable = try await Self.assert(
                api,
                &auth,
                options: "/v1/sessions/passkey/options",
                finish: "/v1/sessions/passkey",
                userHandle: try await Self.handle(h, "pkmfa")
            )
            #expect(discoverable.reply.status == 201, "\(discoverable.reply.json)")
            #expect(discoverable.reply.json["transaction"] == nil && discoverable.reply.json["token"] is String)
            // And without user verification it is not a sign-in at all.
            let unverified = try await Self.assert(
                api,
                &auth,
                options: "/v1/sessions/passkey/options",
                finish: "/v1/sessions/passkey",
                userHandle: try await Self.handle(h, "pkmfa"),
                flags: 0x01
            )
            #expect(unverified.reply.status != 201 && unverified.reply.json["token"] == nil, "\(unverified.reply.json)")
        }
        await h.close()
    }

    /// A ceremony is answered within five minutes of its options or not at all.
    @Test(arguments: Backend.available)
    func aCeremonyLivesFiveMinutes(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("pkfive")
            let token = try await api.token("pkfive")
            var (auth, _) = try await Self.addPasskey(api, token)
            let handle = try await Self.handle(h, "pkfive")
            let late = try await Self.assert(
                api,
                &auth,
                options: "/v1/sessions/passkey/options",
                finish: "/v1/sessions/passkey",
                userHandle: handle,
                beforeAnswering: { h.clock.advance(5 * 60 + 1) }
            )
            #expect(late.reply.status == 409 && late.reply.code == "passkey-ceremony-invalid", "\(late.reply.json)")
            let inTime = try await Self.assert(
                api,
                &auth,
                options: "/v1/sessions/passkey/options",
                finish: "/v1/sessions/passkey",
                userHandle: handle,
                beforeAnswering: { h.clock.advance(5 * 60 - 1) }
            )
            #expect(inTime.reply.status == 201, "\(inTime.reply.json)")
        }
        await h.close()
    }
}
