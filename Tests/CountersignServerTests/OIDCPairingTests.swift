import CountersignAPI
import CountersignClient
import CountersignCrypto
import Crypto
import Foundation
import Testing

@testable import CountersignServer

/// PingOne's pairing by OpenID Connect on both backends (docs/PROTOCOL.md §6.11): a mobile payload in the
/// authorization request, the pairing grant in the first ID token only, the grant pairing only the key the
/// payload named, once; and the payloads refused: used before, stale, from the future, tampered, forged.
@Suite(.closesStorage) struct OIDCPairingTests {
    typealias Flow = OIDCFlowTests

    static func claims(_ jwt: String) throws -> [String: Any] {
        let parts = jwt.split(separator: ".")
        let body = try #require(parts.count == 3 ? Base64URL(text: String(parts[1])) : nil)
        return try #require(try JSONSerialization.jsonObject(with: Data(body.bytes)) as? [String: Any])
    }

    /// The pairing claim of a token response's ID token, if it has one.
    static func pairingClaim(_ tokens: OIDCTokenResponse) throws -> [String: Any]? {
        let idToken = try #require(tokens.id_token)
        return try claims(idToken)["urn:countersign:pairing"] as? [String: Any]
    }

    /// The client `app`, allowed to pair (§6.11).
    static func pairingClient(_ id: String = "app") -> OIDCClient {
        var client = Flow.client(id)
        client.pairing = true
        return client
    }

    static func payload(_ identity: Identity, at now: Date, client: String = "app") throws -> String {
        try CountersignAuthenticator.generateMobilePayload(
            identity: identity,
            issuer: Flow.issuer,
            clientID: client,
            now: now
        )
    }

    static func sha256(_ bytes: [UInt8]) -> String { Base64URL(Array(SHA256.hash(data: bytes))).text }

    /// The authorization's answer with `payload` as `mobilePayload` (consent given).
    static func authorize(
        _ api: API,
        _ token: String,
        payload: String?,
        _ extra: [String: String] = [:]
    ) async throws -> OIDCAuthorizationAnswer {
        var p = extra
        if let payload { p["mobilePayload"] = payload }
        return try await Flow.authorize(api, token, Flow.parameters("app", p), consent: true)
    }

    static func idToken(_ api: API, _ answer: OIDCAuthorizationAnswer) async throws -> OIDCTokenResponse {
        let reply = try await exchange(api, answer)
        #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
        return try JSONDecoder().decode(OIDCTokenResponse.self, from: reply.body)
    }

    static func exchange(_ api: API, _ answer: OIDCAuthorizationAnswer) async throws -> API.Reply {
        let code = try #require(Flow.query(answer.location)["code"], "\(answer)")
        return try await Flow.form(
            api,
            "/oauth2/token",
            [
                "grant_type": "authorization_code", "code": code, "redirect_uri": Flow.redirect,
                "code_verifier": Flow.verifier,
            ],
            basic: ("app", "s3cret")
        )
    }

    /// The pairing grant of `payload`'s ID token.
    static func grant(_ api: API, _ token: String, _ payload: String) async throws -> String {
        let tokens = try await idToken(api, try await authorize(api, token, payload: payload))
        let claim = try #require(try pairingClaim(tokens))
        return try #require(claim["grant"] as? String)
    }

    /// `POST /v1/authenticators` with `grant`, the device's keys `keys`, signed by `signer`.
    static func pair(
        _ api: API,
        _ grant: String,
        keys: Identity,
        signer: Identity? = nil
    ) async throws -> API.Reply {
        let message = DeviceProof.pairingMessage(
            pairingKey: grant,
            signingKey: keys.publicKey,
            encryptionKey: keys.publicKey
        )
        return try await api.call(
            .post,
            "/v1/authenticators",
            json: [
                "pairingKey": grant, "name": "phone", "signingKey": Base64URL(keys.publicKey.spkiDER).text,
                "encryptionKey": Base64URL(keys.publicKey.spkiDER).text,
                "signature": Base64URL(try (signer ?? keys).signature(for: message)).text,
            ]
        )
    }

    static func error(_ answer: OIDCAuthorizationAnswer) -> (String?, String?) {
        let q = Flow.query(answer.location)
        return (q["error"], q["error_description"])
    }

    @Test(arguments: Backend.available)
    func aPayloadMakesTheFirstIDTokenCarryAGrantThatPairsItsKeyOnce(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.publicURL = Flow.issuer }
        try await h.run { api in
            try await api.register("pairalice")
            let token = try await api.token("pairalice")
            #expect(try await h.storage.addOIDCClient(Self.pairingClient()))
            // No payload, no claim.
            let plain = try await Self.idToken(api, try await Self.authorize(api, token, payload: nil))
            #expect(try Self.pairingClaim(plain) == nil)

            let phone = Identity.generate()
            let payload = try Self.payload(phone, at: h.clock.now())
            let tokens = try await Self.idToken(api, try await Self.authorize(api, token, payload: payload))
            let claim = try #require(try Self.pairingClaim(tokens))
            let grant = try #require(claim["grant"] as? String)
            #expect(grant.hasPrefix("cso_pg_") && grant.count == 50)
            #expect(claim["payload"] as? String == Self.sha256(Array(payload.utf8)))
            #expect(claim["key"] as? String == Self.sha256(phone.publicKey.spkiDER))
            #expect(claim["username"] as? String == "pairalice")
            let exp = try #require(claim["exp"] as? Int)
            #expect(exp == Int(h.clock.now().timeIntervalSince1970) + 600)
            // Only the code's ID token carries it: a refreshed one does not.
            let refreshed = try await Flow.form(
                api,
                "/oauth2/token",
                ["grant_type": "refresh_token", "refresh_token": try #require(tokens.refresh_token)],
                basic: ("app", "s3cret")
            )
            let again = try JSONDecoder().decode(OIDCTokenResponse.self, from: refreshed.body)
            #expect(try Self.pairingClaim(again) == nil)

            // The same payload again: its code gives no tokens (the grant opens as the code is exchanged).
            let replay = try await Self.exchange(api, try await Self.authorize(api, token, payload: payload))
            #expect(replay.status == 400 && replay.json["error"] as? String == "invalid_grant")
            #expect((replay.json["error_description"] as? String)?.contains("used before") == true)

            // Another key than the payload's: refused, and the grant is spent.
            let thief = Identity.generate()
            let stolen = try await Self.pair(api, grant, keys: thief)
            #expect(stolen.status == 422 && stolen.json["code"] as? String == "bad-signature", "\(stolen.status)")
            #expect((stolen.json["detail"] as? String)?.contains("another key") == true)
            // The payload's keys, but signed by another: refused (and spends it, as a bad signature does).
            let phone2 = Identity.generate()
            let grant2 = try await Self.grant(
                api,
                token,
                try Self.payload(phone2, at: h.clock.now())
            )
            #expect(
                try await Self.pair(api, grant2, keys: phone2, signer: thief).json["code"] as? String == "bad-signature"
            )
            #expect(try await Self.pair(api, grant2, keys: phone2).json["code"] as? String == "pairing-key-invalid")
            #expect(
                try await Self.pair(api, grant, keys: phone).json["code"] as? String == "pairing-key-invalid",
                "spent by the refusal"
            )

            // Paired once with its own key, then never again.
            let phone3 = Identity.generate()
            let grant3 = try await Self.grant(
                api,
                token,
                try Self.payload(phone3, at: h.clock.now())
            )
            let paired = try await Self.pair(api, grant3, keys: phone3)
            #expect(paired.status == 201, "\(String(decoding: paired.body, as: UTF8.self))")
            #expect(paired.json["username"] as? String == "pairalice")
            let devices = try await api.call(.get, "/v1/devices", token: token)
            let kinds = (devices.json["devices"] as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String }
            #expect(kinds == ["authenticator"], "\(kinds)")
            #expect(try await Self.pair(api, grant3, keys: phone3).json["code"] as? String == "pairing-key-invalid")

            // Declined: spent, nothing paired; a refusal of anything answers the same.
            let phone4 = Identity.generate()
            let grant4 = try await Self.grant(
                api,
                token,
                try Self.payload(phone4, at: h.clock.now())
            )
            let declined = try await api.call(.post, "/v1/authenticators/refusals", json: ["pairingKey": grant4])
            #expect(declined.status == 204)
            #expect(try await Self.pair(api, grant4, keys: phone4).json["code"] as? String == "pairing-key-invalid")
            let unknown = try await api.call(
                .post,
                "/v1/authenticators/refusals",
                json: ["pairingKey": "cso_pg_" + String(repeating: "A", count: 43)]
            )
            #expect(unknown.status == 204)
            // A grant expires with its ten minutes.
            let phone5 = Identity.generate()
            let grant5 = try await Self.grant(
                api,
                token,
                try Self.payload(phone5, at: h.clock.now())
            )
            h.clock.advance(601)
            #expect(try await Self.pair(api, grant5, keys: phone5).json["code"] as? String == "pairing-key-invalid")
        }
    }

    @Test(arguments: Backend.available)
    func aStaleTamperedOrForgedPayloadIsRefusedAndAnOldSignInAskedAgain(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.publicURL = Flow.issuer }
        try await h.run { api in
            try await api.register("pairbob")
            let token = try await api.token("pairbob")
            #expect(try await h.storage.addOIDCClient(Self.pairingClient()))
            let phone = Identity.generate()
            let now = h.clock.now()
            func refused(
                _ payload: String,
                _ words: String,
                _ sourceLocation: SourceLocation = #_sourceLocation
            )
                async throws
            {
                let answer = try await Self.authorize(api, token, payload: payload)
                let (error, description) = Self.error(answer)
                #expect(error == "invalid_request", "\(answer)", sourceLocation: sourceLocation)
                #expect(description?.contains(words) == true, "\(answer)", sourceLocation: sourceLocation)
            }
            let stale = try Self.payload(phone, at: now - 301)
            try await refused(stale, "expired")
            let ahead = try Self.payload(phone, at: now + 120)
            try await refused(ahead, "future")
            // A minute of clock skew is allowed.
            let skewed = try Self.payload(phone, at: now + 50)
            #expect(Flow.query(try await Self.authorize(api, token, payload: skewed).location)["code"] != nil)

            // For another client or another provider: refused (a payload is bound to both).
            try await refused(try Self.payload(phone, at: now, client: "other"), "not a payload signed")
            try await refused(
                try CountersignAuthenticator.generateMobilePayload(
                    identity: phone,
                    issuer: "https://evil.example.com",
                    clientID: "app",
                    now: now
                ),
                "not a payload signed"
            )
            // Only a client an administrator allowed to pair may send one.
            #expect(try await h.storage.addOIDCClient(Flow.client("plain")))
            let plain = try await Flow.authorize(
                api,
                token,
                Flow.parameters("plain", ["mobilePayload": try Self.payload(phone, at: now, client: "plain")]),
                consent: true
            )
            #expect(Self.error(plain).0 == "unauthorized_client", "\(plain)")
            // Always confirmed on the page, naming the key, even with the consent remembered or first party.
            var first = Self.pairingClient("mine")
            first.firstParty = true
            #expect(try await h.storage.addOIDCClient(first))
            let confirming = try await Flow.authorize(
                api,
                token,
                Flow.parameters("mine", ["mobilePayload": try Self.payload(phone, at: now, client: "mine")])
            )
            #expect(
                confirming.action == .consent
                    && confirming.pairingFingerprint == phone.publicKey.fingerprint.description
            )
            let remembered = try await Flow.authorize(
                api,
                token,
                Flow.parameters("app", ["mobilePayload": try Self.payload(phone, at: now)])
            )
            #expect(remembered.action == .consent && remembered.pairingFingerprint != nil, "\(remembered)")
            #expect(try await Flow.authorize(api, token, Flow.parameters("app")).action == .redirect)

            let good = try #require(
                MobilePayload(text: try Self.payload(phone, at: now))
            )
            var later = good
            later.issuedAt += 1
            try await refused(later.text, "not a payload signed")
            var swapped = good
            swapped.signingKey = Base64URL(Identity.generate().publicKey.spkiDER)
            try await refused(swapped.text, "not a payload signed")
            var highS = good
            highS.signature = Base64URL(
                Array(good.signature.bytes[..<32])
                    + P256LowS.subtract(P256LowS.order, Array(good.signature.bytes[32...]))
            )
            try await refused(highS.text, "not a payload signed")
            try await refused("a.b.c.d", "not a payload signed")
            // One spelling per payload: the same signature with a leading zero is not the same payload.
            let parts = good.text.split(separator: ".").map(String.init)
            try await refused(
                [parts[0], "0" + parts[1], parts[2], parts[3]].joined(separator: "."),
                "not a payload signed"
            )
            try await refused(good.text + ".x", "not a payload signed")
            try await refused(String(good.text.dropLast(4)), "not a payload signed")
            // Nothing refused was spent: the good payload still opens a grant.
            #expect(Flow.query(try await Self.authorize(api, token, payload: good.text).location)["code"] != nil)

            // Pairing changes the second factors: a sign-in older than ten minutes is asked for again.
            h.clock.advance(11 * 60)
            let fresh = try Self.payload(phone, at: h.clock.now())
            let asked = try await Self.authorize(api, token, payload: fresh)
            #expect(asked.action == .signIn && asked.reason == "reauthenticate", "\(asked)")
            let silent = try await Self.authorize(api, token, payload: fresh, ["prompt": "none"])
            #expect(Self.error(silent).0 == "interaction_required", "a pairing is always confirmed: \(silent)")
            // Without a payload the same session still gets its code.
            #expect(Flow.query(try await Self.authorize(api, token, payload: nil).location)["code"] != nil)

            // At most three open pairings per account (pairing keys and grants alike).
            let newer = try await api.token("pairbob")
            var opened: [(grant: String, key: Identity)] = []
            for _ in 0..<3 {
                let key = Identity.generate()
                let reply = try await Self.exchange(
                    api,
                    try await Self.authorize(api, newer, payload: try Self.payload(key, at: h.clock.now()))
                )
                let tokens = try JSONDecoder().decode(OIDCTokenResponse.self, from: reply.body)
                if let grant = try Self.pairingClaim(tokens)?["grant"] as? String { opened.append((grant, key)) }
            }
            #expect(opened.count == 3)
            let over = try Self.payload(phone, at: h.clock.now())
            let overReply = try await Self.exchange(api, try await Self.authorize(api, newer, payload: over))
            #expect((overReply.json["error_description"] as? String)?.contains("open pairings") == true)
            // Signing out everywhere ends them (what a session opened goes with it).
            let everywhere = try await api.call(.delete, "/v1/sessions", token: newer)
            #expect(everywhere.status == 204, "\(everywhere.status)")
            let bob = try #require(try await h.storage.account(username: "pairbob"))
            var left = opened.count
            for _ in 0..<100 where left > 0 {
                try await Task.sleep(for: .milliseconds(50))
                left =
                    try await h.storage.sql.raw(
                        "SELECT COUNT(*) AS n FROM pairing_keys WHERE account_id = \(bind: bob.id)"
                    ).first()?.decode(column: "n", as: Int.self) ?? -1
            }
            #expect(left == 0)
            let late = try await Self.pair(api, opened[0].grant, keys: opened[0].key)
            #expect(late.json["code"] as? String == "pairing-key-invalid")
        }
    }
}
