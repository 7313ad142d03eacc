import CountersignAPI
import CountersignCrypto
import Foundation
import Testing

@testable import CountersignServer

/// A sign-in that will be finished with a code asks for no push (issue 19, 19): once every password
/// sign-in pushed to the authenticators, so `login --otp` left a request with a number nobody was shown
/// and spent one of the account's pushes.
@Suite(.closesStorage) struct MFACodeOnlyTests {
    /// An account with a paired authenticator: its account session and the authenticator's device session.
    static func paired(_ api: API, _ username: String) async throws -> (session: String, deviceToken: String) {
        let phone = try await SecondFactorGuessingTests.pairPhone(api, username)
        return (phone.session, phone.token)
    }

    static func challenges(_ api: API, _ deviceToken: String) async throws -> Int {
        try #require(
            try await api.call(.get, "/v1/authenticator/challenges", token: deviceToken).json["challenges"] as? [Any]
        ).count
    }

    @Test(arguments: Backend.available)
    func aSignInByCodeSendsNoPushAndSpendsNone(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            let (session, deviceToken) = try await Self.paired(api, "petra")
            // More code sign-ins than the account's pushes (5): none is spent.
            for _ in 1...6 {
                let r = try await api.call(
                    .post,
                    "/v1/sessions",
                    json: ["username": "petra", "password": "correct horse", "secondFactor": "code"]
                )
                #expect(r.status == 202)
                let tx = try #require(r.json["transaction"] as? [String: Any])
                #expect(tx["status"] as? String == "OTP_REQUIRED" && tx["numberMatching"] == nil, "\(tx)")
                #expect(
                    (tx["methods"] as? [String]).map { !$0.contains("push") && $0.contains("totp") } == true,
                    "\(tx)"
                )
                #expect(try await Self.challenges(api, deviceToken) == 0, "no push")
                h.clock.advance(61)
            }
            let pushed = try await api.signIn("petra")
            #expect(
                (pushed.json["transaction"] as? [String: Any])?["status"] as? String == "PUSH_CONFIRMATION_REQUIRED",
                "\(pushed.json)"
            )
            #expect(try await Self.challenges(api, deviceToken) == 1)

            // A re-authentication the same way.
            h.clock.advance(61)
            let reauth = try await api.call(
                .post,
                "/v1/sessions/current/reauth",
                json: ["password": "correct horse", "secondFactor": "code"],
                token: session
            )
            #expect(
                reauth.status == 202
                    && (reauth.json["transaction"] as? [String: Any])?["status"] as? String == "OTP_REQUIRED",
                "\(reauth.json)"
            )
            #expect(try await Self.challenges(api, deviceToken) == 0)

            let unknown = try await api.call(
                .post,
                "/v1/sessions",
                json: ["username": "petra", "password": "correct horse", "secondFactor": "sms"]
            )
            #expect(unknown.status == 422 && unknown.code == "invalid-field", "\(unknown.status) \(unknown.json)")
        }
    }
}
