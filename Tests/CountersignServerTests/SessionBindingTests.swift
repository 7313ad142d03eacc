import CountersignAPI
import CountersignCrypto
import Foundation
import Testing

@testable import CountersignServer

/// Staying signed in in a browser (docs/PROTOCOL.md §1.1, issue 35), on both backends, with the clock
/// injected: a session binds a key once, soon after signing in; the key's signature over a fresh nonce
/// resumes the session (no token kept anywhere); a forged, replayed, stale or unknown proof resumes
/// nothing; sign-out, sign-out everywhere, a password change, a lock, a removed passkey and a revoked
/// device end the binding; a resumed session keeps the re-authentication interval of the original.
@Suite(.closesStorage) struct SessionBindingTests {
    /// The body that binds `key` to a session of `accountID` (its own key, or `deviceID`'s signing key).
    static func binding(_ key: Identity, accountID: String, deviceID: String? = nil) throws -> [String: any Sendable] {
        var body: [String: any Sendable] = [
            "publicKey": Base64URL(key.publicKey.spkiDER).text,
            "signature": Base64URL(
                try key.signature(for: DeviceProof.bindingMessage(accountID: accountID, key: key.publicKey))
            ).text,
        ]
        if let deviceID { body["deviceId"] = deviceID }
        return body
    }

    /// `PUT /v1/sessions/current/binding` of `key` (or, with `deviceID`, that device's key) with `token`.
    static func bind(
        _ api: API,
        _ token: String?,
        _ key: Identity,
        accountID: String,
        deviceID: String? = nil
    ) async throws -> API.Reply {
        try await api.call(
            .put,
            "/v1/sessions/current/binding",
            json: try binding(key, accountID: accountID, deviceID: deviceID),
            token: token
        )
    }

    /// Registers `key` (signing and encryption) as a messaging device of the account, as a client does.
    static func registerDevice(
        _ api: API,
        token: String,
        accountID: String,
        key: Identity,
        name: String
    ) async throws -> API.Reply {
        let issued = try await api.call(.post, "/v1/devices/challenges", token: token)
        let challenge = try #require(issued.json["challenge"] as? String)
        let message = DeviceProof.registrationMessage(
            challenge: try #require(Base64URL(text: challenge)).bytes,
            accountID: accountID,
            signingKey: key.publicKey,
            encryptionKey: key.publicKey
        )
        let spki = Base64URL(key.publicKey.spkiDER).text
        return try await api.call(
            .post,
            "/v1/devices",
            json: [
                "name": name, "signingKey": spki, "encryptionKey": spki, "challenge": challenge,
                "signature": Base64URL(try key.signature(for: message)).text,
            ],
            token: token
        )
    }

    /// A new account `username`, signed in, with a messaging device named `name` registered for it: its
    /// session, its ID, the device's key and the device's ID.
    static func accountWithDevice(
        _ api: API,
        _ username: String,
        name: String
    ) async throws -> (token: String, accountID: String, device: Identity, deviceID: String) {
        try await api.register(username)
        let token = try await api.token(username)
        let accountID = try await Self.accountID(api, token)
        let device = Identity.generate()
        let registered = try await Self.registerDevice(api, token: token, accountID: accountID, key: device, name: name)
        #expect(registered.status == 201, "\(registered.status) \(registered.json)")
        return (token, accountID, device, try #require(registered.json["id"] as? String))
    }

    /// Resumes with `key`'s signature over a fresh nonce; the reply and the nonce used.
    /// `nonce`: one already issued (a replay) instead of a fresh one; `statement`: what the key signs
    /// (another context's message, to show it is refused).
    static func resume(
        _ api: API,
        bindingID: String,
        key: Identity,
        nonce given: String? = nil,
        statement: ([UInt8], String) -> [UInt8] = { DeviceProof.resumptionMessage(nonce: $0, bindingID: $1) }
    ) async throws -> (API.Reply, String) {
        var nonce = given ?? ""
        if given == nil {
            let issued = try await api.call(.post, "/v1/session-resumptions/challenges", json: ["bindingId": bindingID])
            #expect(issued.status == 201, "\(issued.status) \(String(decoding: issued.body, as: UTF8.self))")
            nonce = try #require(issued.json["challenge"] as? String)
        }
        let message = statement(try #require(Base64URL(text: nonce)).bytes, bindingID)
        let reply = try await api.call(
            .post,
            "/v1/session-resumptions",
            json: [
                "bindingId": bindingID, "nonce": nonce, "signature": Base64URL(try key.signature(for: message)).text,
            ]
        )
        return (reply, nonce)
    }

    static func accountID(_ api: API, _ token: String) async throws -> String {
        try #require(try await api.call(.get, "/v1/me", token: token).json["id"] as? String)
    }

    @Test(arguments: Backend.available)
    func aBoundKeyResumesTheSessionAndNothingElseDoes(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("bindalice")
            let token = try await api.token("bindalice")
            let accountID = try await Self.accountID(api, token)
            let key = Identity.generate()
            // Bad bindings first: a signature by another key, over another account, no signature.
            let stranger = Identity.generate()
            var bad = try Self.binding(key, accountID: accountID)
            bad["signature"] = try Self.binding(stranger, accountID: accountID)["signature"]
            var r = try await api.call(.put, "/v1/sessions/current/binding", json: bad, token: token)
            #expect(r.status == 422 && r.code == "bad-signature", "\(r.status) \(r.json)")
            r = try await Self.bind(api, token, key, accountID: "someone-else")
            #expect(r.status == 422 && r.code == "bad-signature")
            r = try await api.call(
                .put,
                "/v1/sessions/current/binding",
                json: ["publicKey": Base64URL([1, 2, 3]).text, "signature": Base64URL([0]).text],
                token: token
            )
            #expect(r.status == 422 && r.json["field"] as? String == "publicKey")
            r = try await api.call(
                .put,
                "/v1/sessions/current/binding",
                json: try Self.binding(key, accountID: accountID)
            )
            #expect(r.status == 401, "no session")

            r = try await Self.bind(api, token, key, accountID: accountID)
            #expect(r.status == 200, "\(r.status) \(r.json)")
            let bindingID = try #require(r.json["id"] as? String)
            #expect(r.json["idleSeconds"] as? Int == 12 * 3600, "no device: the shorter idle limit")
            #expect(r.json["deviceId"] == nil)

            // The key resumes a new session of the same account: a token of its own, the first still valid.
            let (resumed, nonce) = try await Self.resume(api, bindingID: bindingID, key: key)
            #expect(resumed.status == 201, "\(resumed.status) \(resumed.json)")
            let second = try #require(resumed.json["token"] as? String)
            #expect(second != token && second.hasPrefix("cs_"))
            #expect(try await Self.accountID(api, second) == accountID)
            #expect(try await api.call(.get, "/v1/me", token: token).status == 200)

            // The nonce is single use; another key, an unknown binding and a wrong-length nonce resume nothing.
            let (replay, _) = try await Self.resume(api, bindingID: bindingID, key: key, nonce: nonce)
            #expect(replay.status == 400 && replay.code == "challenge-invalid", "\(replay.status) \(replay.json)")
            let (wrongKey, _) = try await Self.resume(api, bindingID: bindingID, key: stranger)
            #expect(wrongKey.status == 401 && wrongKey.code == "sign-in-ended" && wrongKey.isProblem)
            let (unknown, _) = try await Self.resume(api, bindingID: "sb_nobody", key: key)
            #expect(unknown.status == 401 && unknown.code == "sign-in-ended")
            #expect(unknown.json["detail"] as? String == wrongKey.json["detail"] as? String, "one answer for both")
            let short = try await api.call(
                .post,
                "/v1/session-resumptions",
                json: ["bindingId": bindingID, "nonce": Base64URL([1, 2]).text, "signature": Base64URL([0]).text]
            )
            #expect(short.status == 400 && short.code == "challenge-invalid")
            // A signature made for a device session (another context) does not resume.
            let (crossed, _) = try await Self.resume(api, bindingID: bindingID, key: key) {
                DeviceProof.sessionMessage(nonce: $0, deviceID: $1)
            }
            #expect(crossed.status == 401 && crossed.code == "sign-in-ended")

            // Still good after all that; sign-out from any of its sessions ends the binding and every session
            // resumed from it, and the key resumes nothing after.
            let (third, _) = try await Self.resume(api, bindingID: bindingID, key: key)
            let thirdToken = try #require(third.json["token"] as? String)
            #expect(try await api.call(.delete, "/v1/sessions/current", token: thirdToken).status == 204)
            #expect(try await api.call(.get, "/v1/me", token: second).status == 401)
            #expect(try await api.call(.get, "/v1/me", token: token).status == 401, "the bound session too")
            let (after, _) = try await Self.resume(api, bindingID: bindingID, key: key)
            #expect(after.status == 401 && after.code == "sign-in-ended")
        }
    }

    /// The nonce a binding and each resumption give resumes in one request, once, for its own binding only,
    /// until the next one replaces it or it expires (the binding's idle limit or an hour, whichever is shorter);
    /// a fresh nonce asked for meanwhile is not replaced, and a fresh one still works after.
    @Test(arguments: Backend.available)
    func theNextNonceResumesInOneRequestOnceUntilItExpires(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            let a = try await Self.accountWithDevice(api, "nextnan", name: "browser")
            var r = try await Self.bind(api, a.token, a.device, accountID: a.accountID, deviceID: a.deviceID)
            #expect(r.status == 200, "\(r.status) \(r.json)")
            #expect(r.headers[.cacheControl] == "no-store")
            let bindingID = try #require(r.json["id"] as? String)
            let given = try #require(r.json["nextNonce"] as? [String: Any])
            let first = try #require(given["challenge"] as? String)
            let expiresText = try #require(given["expiresAt"] as? String)
            let expires = try #require(WireDate.parse(expiresText))
            #expect(
                abs(expires.timeIntervalSince(h.clock.now()) - SessionBindingService.nextNonceLifetime) < 1,
                "a device binding (30 days idle): an hour"
            )

            let (resumed, _) = try await Self.resume(api, bindingID: bindingID, key: a.device, nonce: first)
            #expect(resumed.status == 201, "\(resumed.status) \(resumed.json)")
            let next = try #require((resumed.json["nextNonce"] as? [String: Any])?["challenge"] as? String)
            #expect(next != first)
            let (replay, _) = try await Self.resume(api, bindingID: bindingID, key: a.device, nonce: first)
            #expect(replay.status == 400 && replay.code == "challenge-invalid", "single use")

            // A resumption replaces the binding's next nonce: `next`, never spent, resumes nothing after one.
            func fresh() async throws -> String {
                let asked = try await api.call(
                    .post,
                    "/v1/session-resumptions/challenges",
                    json: ["bindingId": bindingID]
                )
                return try #require(asked.json["challenge"] as? String)
            }
            let (viaFresh, _) = try await Self.resume(
                api,
                bindingID: bindingID,
                key: a.device,
                nonce: try await fresh()
            )
            #expect(viaFresh.status == 201, "\(viaFresh.status) \(viaFresh.json)")
            let (replaced, _) = try await Self.resume(api, bindingID: bindingID, key: a.device, nonce: next)
            #expect(
                replaced.status == 400 && replaced.code == "challenge-invalid",
                "replaced by the resumption after it"
            )
            // A fresh nonce asked for before a replacement outlives it.
            let third = try #require((viaFresh.json["nextNonce"] as? [String: Any])?["challenge"] as? String)
            let early = try await fresh()
            let (viaNext, _) = try await Self.resume(api, bindingID: bindingID, key: a.device, nonce: third)
            #expect(viaNext.status == 201, "\(viaNext.status) \(viaNext.json)")
            let (viaEarly, _) = try await Self.resume(api, bindingID: bindingID, key: a.device, nonce: early)
            #expect(viaEarly.status == 201, "a fresh nonce is not replaced: \(viaEarly.status) \(viaEarly.json)")
            let latest = try #require((viaEarly.json["nextNonce"] as? [String: Any])?["challenge"] as? String)

            // Another binding's next nonce is not this one's.
            let b = try await Self.accountWithDevice(api, "nextnbo", name: "browser")
            r = try await Self.bind(api, b.token, b.device, accountID: b.accountID, deviceID: b.deviceID)
            let bNext = try #require((r.json["nextNonce"] as? [String: Any])?["challenge"] as? String)
            let (crossed, _) = try await Self.resume(api, bindingID: bindingID, key: a.device, nonce: bNext)
            #expect(crossed.status == 400 && crossed.code == "challenge-invalid", "\(crossed.status) \(crossed.json)")

            // Past its lifetime it resumes nothing; a fresh nonce still does.
            h.clock.advance(SessionBindingService.nextNonceLifetime + 1)
            let (late, _) = try await Self.resume(api, bindingID: bindingID, key: a.device, nonce: latest)
            #expect(late.status == 400 && late.code == "challenge-invalid", "\(late.status) \(late.json)")
            let (fresh, _) = try await Self.resume(api, bindingID: bindingID, key: a.device)
            #expect(fresh.status == 201, "\(fresh.status) \(fresh.json)")
        }
    }

    /// Only a fresh session binds, and the idle limits come from the configuration and the injected clock.
    @Test(arguments: Backend.available)
    func onlyAFreshSessionBindsAndAnIdleBindingEnds(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.sessionIdle = 30 * 86_400 }
        try await h.run { api in
            try await api.register("bindbob")
            let token = try await api.token("bindbob")
            let accountID = try await Self.accountID(api, token)
            let key = Identity.generate()
            h.clock.advance(11 * 60)
            var r = try await Self.bind(api, token, key, accountID: accountID)
            #expect(r.status == 403 && r.code == "binding-too-late", "\(r.status) \(r.json)")

            let fresh = try await api.token("bindbob")
            r = try await Self.bind(api, fresh, key, accountID: accountID)
            let bindingID = try #require(r.json["id"] as? String)
            // Used within its idle limit it lasts; a resumption restarts the count.
            h.clock.advance(h.config.bindingIdleWithoutDevice - 60)
            let (ok, _) = try await Self.resume(api, bindingID: bindingID, key: key)
            #expect(ok.status == 201, "\(ok.status) \(ok.json)")
            h.clock.advance(h.config.bindingIdleWithoutDevice + 1)
            let (stale, _) = try await Self.resume(api, bindingID: bindingID, key: key)
            #expect(stale.status == 401 && stale.code == "sign-in-ended", "idle past its limit")
            #expect(try await h.storage.binding(id: bindingID) == nil, "deleted")
        }
    }

    @Test(arguments: Backend.available)
    func aServerWithStayingSignedInOffBindsNothing(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.bindingIdle = 0 }
        try await h.run { api in
            try await api.register("bindoff")
            let token = try await api.token("bindoff")
            let r = try await api.call(
                .put,
                "/v1/sessions/current/binding",
                json: try Self.binding(Identity.generate(), accountID: try await Self.accountID(api, token)),
                token: token
            )
            #expect(r.status == 403 && r.code == "stay-signed-in-off")
        }
    }

    /// A resumed session is not a fresh authentication: sensitive changes still ask for the password
    /// after the account's interval, counted from the original sign-in.
    @Test(arguments: Backend.available)
    func aResumedSessionKeepsTheReauthenticationInterval(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.sessionIdle = 30 * 86_400 }
        try await h.run { api in
            try await api.register("bindcarol")
            let token = try await api.token("bindcarol")
            let accountID = try await Self.accountID(api, token)
            let key = Identity.generate()
            let r = try await Self.bind(api, token, key, accountID: accountID)
            let bindingID = try #require(r.json["id"] as? String)
            let settings = try await api.call(
                .put,
                "/v1/me/settings",
                json: ["reauthIntervalMinutes": 60],
                token: token
            )
            #expect(settings.status == 200, "\(settings.status) \(settings.json)")
            h.clock.advance(6 * 3600)
            let (resumed, _) = try await Self.resume(api, bindingID: bindingID, key: key)
            let later = try #require(resumed.json["token"] as? String)
            let change = try await api.call(
                .put,
                "/v1/me/password",
                json: ["currentPassword": "correct horse", "newPassword": "a much better horse"],
                token: later
            )
            #expect(
                change.status == 401 && change.code == "reauthentication-required",
                "\(change.status) \(change.json)"
            )
        }
    }

    /// Every ending of the account's sessions ends its bindings, on both backends: sign-out everywhere,
    /// a password change (even the changing browser's own) and a lock.
    @Test(arguments: Backend.available)
    func endingsEndBindings(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("bindeve")
            func bound() async throws -> (token: String, id: String, key: Identity) {
                let token = try await api.token("bindeve")
                let key = Identity.generate()
                let r = try await Self.bind(api, token, key, accountID: try await Self.accountID(api, token))
                return (token, try #require(r.json["id"] as? String), key)
            }
            var a = try await bound()
            let b = try await bound()
            #expect(try await api.call(.delete, "/v1/sessions", token: a.token).status == 204)
            for binding in [a, b] {
                let (r, _) = try await Self.resume(api, bindingID: binding.id, key: binding.key)
                #expect(r.status == 401, "sign-out everywhere ended \(binding.id)")
            }

            a = try await bound()
            let change = try await api.call(
                .put,
                "/v1/me/password",
                json: ["currentPassword": "correct horse", "newPassword": "a much better horse"],
                token: a.token
            )
            #expect(change.status == 204, "\(change.status) \(change.json)")
            let (afterChange, _) = try await Self.resume(api, bindingID: a.id, key: a.key)
            #expect(afterChange.status == 401, "a password change ends even this browser's binding")
            #expect(try await api.call(.get, "/v1/me", token: a.token).status == 200, "its session goes on")

            let c = try await api.token("bindeve", "a much better horse")
            let key = Identity.generate()
            let r = try await Self.bind(api, c, key, accountID: try await Self.accountID(api, c))
            let id = try #require(r.json["id"] as? String)
            // Three failures, a delay, the fourth, a delay, the fifth: locked (LockoutAPITests).
            for _ in 0..<3 { _ = try await api.signIn("bindeve", "wrong horse") }
            h.clock.advance(30 * 60)
            _ = try await api.signIn("bindeve", "wrong horse")
            h.clock.advance(30 * 60)
            let fifth = try await api.signIn("bindeve", "wrong horse")
            #expect(fifth.json["locked"] as? Bool == true, "\(fifth.status) \(fifth.json)")
            let (locked, _) = try await Self.resume(api, bindingID: id, key: key)
            #expect(locked.status == 401, "a lock ended the binding: \(locked.status) \(locked.json)")
        }
    }

    /// Sixteen tabs' sessions at most per binding; the least recently used beyond end.
    @Test(arguments: Backend.available)
    func aBindingKeepsSixteenSessions(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("bindtabs")
            let token = try await api.token("bindtabs")
            let key = Identity.generate()
            let r = try await Self.bind(api, token, key, accountID: try await Self.accountID(api, token))
            let id = try #require(r.json["id"] as? String)
            var tokens: [String] = []
            for _ in 0..<SessionBindingService.sessionsPerBinding {
                h.clock.advance(1)
                let (resumed, _) = try await Self.resume(api, bindingID: id, key: key)
                tokens.append(try #require(resumed.json["token"] as? String))
            }
            #expect(try await api.call(.get, "/v1/me", token: token).status == 401, "the oldest of 17 ended")
            for t in tokens { #expect(try await api.call(.get, "/v1/me", token: t).status == 200) }
        }
    }

    /// Bound to a messaging device's key, the binding lasts the device's idle limit, follows its key
    /// rotations, and ends with its revocation; a key that is not the device's current one is refused.
    @Test(arguments: Backend.available)
    func aDeviceBindingFollowsTheDevice(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            let (token, accountID, device, deviceID) = try await Self.accountWithDevice(api, "binddev", name: "Laptop")

            // Another key named as the device's: refused.
            var r = try await Self.bind(api, token, Identity.generate(), accountID: accountID, deviceID: deviceID)
            #expect(r.status == 422 && r.json["field"] as? String == "deviceId", "\(r.status) \(r.json)")
            // An ad hoc binding first, then moved to the device's key (a browser that made its device later).
            let own = Identity.generate()
            r = try await Self.bind(api, token, own, accountID: accountID)
            var bindingID = try #require(r.json["id"] as? String)
            h.clock.advance(5 * 60)  // within the 10 minutes after the sign-in: the binding moves to the device
            r = try await Self.bind(api, token, device, accountID: accountID, deviceID: deviceID)
            #expect(r.status == 200 && r.json["id"] as? String == bindingID, "\(r.status) \(r.json)")
            #expect(r.json["idleSeconds"] as? Int == 30 * 86_400 && r.json["deviceId"] as? String == deviceID)
            let (ownKey, _) = try await Self.resume(api, bindingID: bindingID, key: own)
            #expect(ownKey.status == 401, "the old own key no longer resumes")
            // The same browser signing in again and binding its device keeps that binding, under its ID (a
            // reload before the answer came still resumes), now with this session too.
            let again = try await api.token("binddev")
            r = try await Self.bind(api, again, device, accountID: accountID, deviceID: deviceID)
            #expect(r.status == 200 && r.json["id"] as? String == bindingID, "\(r.status) \(r.json)")
            #expect(try await api.call(.delete, "/v1/sessions/current", token: again).status == 204)
            #expect(try await api.call(.get, "/v1/me", token: token).status == 401, "one browser: all its tabs")
            let (gone, _) = try await Self.resume(api, bindingID: bindingID, key: device)
            #expect(gone.status == 401)
            let third = try await api.token("binddev")
            r = try await Self.bind(api, third, device, accountID: accountID, deviceID: deviceID)
            bindingID = try #require(r.json["id"] as? String)
            h.clock.advance(20 * 86_400)  // past the shorter limit, within the device's
            let (resumed, _) = try await Self.resume(api, bindingID: bindingID, key: device)
            #expect(resumed.status == 201, "\(resumed.status) \(resumed.json)")
            let fresh = try await api.token("binddev")
            #expect(try await api.call(.delete, "/v1/devices/\(deviceID)", token: fresh).status == 204)
            #expect(try await h.storage.binding(id: bindingID) == nil, "the revocation deleted the binding")
            let (revoked, _) = try await Self.resume(api, bindingID: bindingID, key: device)
            #expect(revoked.status == 401 && revoked.code == "sign-in-ended", "the device was revoked")
        }
    }

    /// Review findings: a resumed session is never fresh (its start is the reload's, not a sign-in), so it
    /// can neither put a key of its own on its binding nor move it to a device it just registered; a stale
    /// session cannot bind at all; revoking the device ends what was resumed from its binding.
    @Test(arguments: Backend.available)
    func aResumedOrStaleSessionCannotTakeOverItsBinding(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.sessionIdle = 30 * 86_400 }
        try await h.run { api in
            try await api.register("bindmal")
            let token = try await api.token("bindmal")
            let accountID = try await Self.accountID(api, token)
            let own = Identity.generate()
            var r = try await Self.bind(api, token, own, accountID: accountID)
            let bindingID = try #require(r.json["id"] as? String)
            h.clock.advance(11 * 60)
            let (resumed, _) = try await Self.resume(api, bindingID: bindingID, key: own)
            let stolen = try #require(resumed.json["token"] as? String)
            // Seconds after the resumption: still not fresh.
            let thief = Identity.generate()
            r = try await Self.bind(api, stolen, thief, accountID: accountID)
            #expect(r.status == 403 && r.code == "binding-too-late", "\(r.status) \(r.json)")
            // A device the stolen session registers (the account asks no re-authentication) is no way in.
            let registered = try await Self.registerDevice(
                api,
                token: stolen,
                accountID: accountID,
                key: thief,
                name: "Thief"
            )
            let thiefDevice = try #require(registered.json["id"] as? String, "\(registered.status) \(registered.json)")
            r = try await Self.bind(api, stolen, thief, accountID: accountID, deviceID: thiefDevice)
            #expect(r.status == 403 && r.code == "binding-too-late", "\(r.status) \(r.json)")
            let (still, _) = try await Self.resume(api, bindingID: bindingID, key: own)
            #expect(still.status == 201, "the browser's own key still resumes")
            let (notThief, _) = try await Self.resume(api, bindingID: bindingID, key: thief)
            #expect(notThief.status == 401)
        }
    }

    /// A session resumed a minute after the account's last full authentication carries that authentication
    /// but is not fresh: it moves the binding to no key of its own until it re-authenticates itself.
    @Test(arguments: Backend.available)
    func aSessionResumedSoonAfterASignInCannotTakeOverItsBinding(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("bindsoon")
            let token = try await api.token("bindsoon")
            let accountID = try await Self.accountID(api, token)
            let own = Identity.generate()
            var r = try await Self.bind(api, token, own, accountID: accountID)
            let bindingID = try #require(r.json["id"] as? String)
            h.clock.advance(60)
            let (resumed, _) = try await Self.resume(api, bindingID: bindingID, key: own)
            let resumedToken = try #require(resumed.json["token"] as? String)
            let thief = Identity.generate()
            r = try await Self.bind(api, resumedToken, thief, accountID: accountID)
            #expect(r.status == 403 && r.code == "binding-too-late", "\(r.status) \(r.json)")
            let (notThief, _) = try await Self.resume(api, bindingID: bindingID, key: thief)
            #expect(notThief.status == 401, "the binding is still the browser's key")
            // Re-authenticated in that session, it may.
            let reauth = try await api.call(
                .post,
                "/v1/sessions/current/reauth",
                json: ["password": "correct horse"],
                token: resumedToken
            )
            #expect(reauth.status == 204, "\(reauth.status) \(reauth.json)")
            r = try await Self.bind(api, resumedToken, thief, accountID: accountID)
            #expect(r.status == 200, "\(r.status) \(r.json)")
        }
    }

    /// Revoking the device a browser is bound to ends its binding at once: nothing resumes from it. The
    /// sessions already resumed go on to their own limits (idle, lifetime), so that the page learns of the
    /// revocation through one and wipes its data (SPEC §14.5).
    @Test(arguments: Backend.available)
    func revokingTheDeviceEndsItsBinding(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            let (token, accountID, device, deviceID) = try await Self.accountWithDevice(api, "bindrev", name: "Copied")
            let r = try await Self.bind(api, token, device, accountID: accountID, deviceID: deviceID)
            let bindingID = try #require(r.json["id"] as? String)
            let (copy, _) = try await Self.resume(api, bindingID: bindingID, key: device)
            let copied = try #require(copy.json["token"] as? String)
            let owner = try await api.token("bindrev")
            #expect(try await api.call(.delete, "/v1/devices/\(deviceID)", token: owner).status == 204)
            #expect(try await h.storage.binding(id: bindingID) == nil)
            let (again, _) = try await Self.resume(api, bindingID: bindingID, key: device)
            #expect(again.status == 401 && again.code == "sign-in-ended")
            let devices = try await api.call(.get, "/v1/devices", token: copied)
            #expect(devices.status == 200, "the resumed session learns of the revocation")
        }
    }

    /// Twenty bindings an account at most; and binds racing sign-out-everywhere leave none behind.
    @Test(arguments: Backend.available)
    func bindingsAreCappedAndNoneOutlivesAnEndingItRaces(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("bindmany")
            let first = try await api.token("bindmany")
            let accountID = try await Self.accountID(api, first)
            var ids: [String] = []
            for i in 0...SessionBindingService.bindingsPerAccount {
                let token = i == 0 ? first : try await api.token("bindmany")
                h.clock.advance(1)
                let r = try await Self.bind(api, token, Identity.generate(), accountID: accountID)
                ids.append(try #require(r.json["id"] as? String))
            }
            #expect(try await h.storage.binding(id: ids[0]) == nil, "the least recently used of 21 ended")
            #expect(try await h.storage.binding(id: ids[1]) != nil)

            for round in 0..<8 {
                let tokens = try await (0..<4).asyncMap { _ in try await api.token("bindmany") }
                let made = try await withThrowingTaskGroup(of: String?.self) { group in
                    for token in tokens {
                        group.addTask {
                            let r = try await Self.bind(api, token, Identity.generate(), accountID: accountID)
                            return r.json["id"] as? String
                        }
                    }
                    group.addTask {
                        _ = try await api.call(.delete, "/v1/sessions", token: tokens[round % 4])
                        return nil
                    }
                    var ids: [String] = []
                    for try await id in group { if let id { ids.append(id) } }
                    return ids
                }
                for id in made + ids {
                    #expect(try await h.storage.binding(id: id) == nil, "round \(round): \(id) outlived the ending")
                }
            }
        }
    }
}

extension Range where Bound == Int {
    fileprivate func asyncMap<T>(_ body: (Int) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for i in self { out.append(try await body(i)) }
        return out
    }
}
