import CountersignCrypto
import Foundation
import Testing

@testable import CountersignServer

/// How a session was authenticated (RFC 8176 `amr`), as each sign-in ends and as a reload resumes it.
@Suite(.closesStorage) struct SessionMethodsTests {
    @Test func eachSignInIsNamedByItsMethods() {
        #expect(SessionMethods.of(.success, passwordless: false, passkey: false) == ["pwd"])
        #expect(
            SessionMethods.of(.succeeded(via: .totp), passwordless: false, passkey: false) == ["pwd", "otp", "mfa"]
        )
        #expect(
            SessionMethods.of(.succeeded(via: .code), passwordless: false, passkey: false) == ["pwd", "otp", "mfa"]
        )
        #expect(
            SessionMethods.of(.succeeded(via: .recoveryCode), passwordless: false, passkey: false)
                == ["pwd", "otp", "mfa"]
        )
        #expect(
            SessionMethods.of(.succeeded(via: .push), passwordless: false, passkey: false) == ["pwd", "swk", "mfa"]
        )
        #expect(SessionMethods.of(.succeeded(via: .push), passwordless: true, passkey: false) == ["swk"])
        #expect(
            SessionMethods.of(.succeeded(via: .passkey), passwordless: false, passkey: true) == ["hwk", "user", "mfa"]
        )
        #expect(SessionMethods.isMultiFactor(["pwd", "otp", "mfa"]) && !SessionMethods.isMultiFactor(["pwd"]))
        #expect(SessionMethods.isPhishingResistant(["hwk", "user", "mfa"]))
        #expect(!SessionMethods.isPhishingResistant(["pwd", "swk", "mfa"]))
    }

    @Test(arguments: Backend.available)
    func aPasswordSignInIsPwdAndAResumedSessionKeepsItsMethods(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.sessionIdle = 30 * 86_400 }
        try await h.run { api in
            try await api.register("amrdora")
            let token = try await api.token("amrdora")
            #expect(try await h.storage.session(tokenHash: TokenHash.hex(token))?.methods == ["pwd"])
            let accountID = try await SessionBindingTests.accountID(api, token)
            // A session that signed in with a second factor (stored as the sign-in stores it), bound, then
            // resumed after a reload: the resumed session says the same.
            let (strong, record) = h.services.sessions.newAccountSession(
                accountID: accountID,
                origin: RequestOrigin(address: "127.0.0.1", userAgent: "test"),
                now: h.clock.now(),
                methods: ["pwd", "otp", "mfa"]
            )
            try await h.storage.createSession(record)
            let key = Identity.generate()
            let bound = try await SessionBindingTests.bind(api, strong, key, accountID: accountID)
            let bindingID = try #require(bound.json["id"] as? String)
            #expect(try await h.storage.binding(id: bindingID)?.methods == ["pwd", "otp", "mfa"])
            let (resumed, _) = try await SessionBindingTests.resume(api, bindingID: bindingID, key: key)
            let later = try #require(resumed.json["token"] as? String)
            #expect(try await h.storage.session(tokenHash: TokenHash.hex(later))?.methods == ["pwd", "otp", "mfa"])
            // A re-authentication says how the session was last proven, on the session and its binding: here the
            // password alone (the account has no second factor).
            h.clock.advance(60)
            let reauth = try await api.call(
                .post,
                "/v1/sessions/current/reauth",
                json: ["password": "correct horse"],
                token: later
            )
            #expect(reauth.status == 204, "\(reauth.status) \(reauth.json)")
            #expect(try await h.storage.session(tokenHash: TokenHash.hex(later))?.methods == ["pwd"])
            #expect(try await h.storage.binding(id: bindingID)?.methods == ["pwd"])
        }
    }
}
