import CountersignCrypto
import Foundation
import Testing

@testable import CountersignServer

/// Re-authentication on an account with a second factor (docs/PROTOCOL.md §3): the password alone
/// re-authenticates nothing, and changes to the second factors need a recent full authentication even
/// when the account's own interval is "never".
@Suite(.closesStorage) struct MFAReauthTests {
    static func outcomes(_ h: Harness, _ username: String) async throws -> [String] {
        let account = try #require(try await h.store.account(username: username))
        return try await h.store.auditEvents(accountID: account.id, before: nil, limit: 100).reversed().map {
            "\($0.kind) \($0.outcome)"
        }
    }

    /// A passcode for the account's authenticator app now (the step after `after`, when given, so that a
    /// spent step is never reused).
    static func code(_ secret: String, _ h: Harness) throws -> String {
        try OTPGenerator(secret: #require(Base32.decode(secret))).code(at: h.clock.now())
    }

    @Test(arguments: Backend.available)
    func aStolenSessionAndPasswordCannotTurnTheSecondFactorOff(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("maria")
            let session = try await api.token("maria")
            // An authenticator app, confirmed within the fresh sign-in.
            let enrolled = try await api.call(.post, "/v1/me/mfa/totp", token: session)
            #expect(enrolled.status == 201)
            let secret = try #require(enrolled.json["secret"] as? String)
            #expect(
                try await api.call(
                    .post,
                    "/v1/me/mfa/totp/confirm",
                    json: ["code": try Self.code(secret, h)],
                    token: session
                ).status == 200
            )

            // The account's interval is "never" (0), but a second-factor change still needs a recent sign-in.
            h.clock.advance(11 * 60)
            let refused = try await api.call(.delete, "/v1/me/mfa", token: session)
            #expect(
                refused.status == 401 && refused.code == "reauthentication-required",
                "\(refused.status) \(refused.code ?? "")"
            )
            #expect(
                try await api.call(.post, "/v1/me/mfa/recovery-codes", token: session).code
                    == "reauthentication-required"
            )
            #expect(
                try await api.call(.post, "/v1/me/mfa/pairing-keys", token: session).code == "reauthentication-required"
            )

            // The password alone: a pending second factor, and nothing re-authenticated.
            #expect(
                try await api.call(
                    .post,
                    "/v1/sessions/current/reauth",
                    json: ["password": "wrong horse"],
                    token: session
                ).code == "wrong-password"
            )
            let pending = try await api.call(
                .post,
                "/v1/sessions/current/reauth",
                json: ["password": "correct horse"],
                token: session
            )
            #expect(pending.status == 202)
            let tx = try #require(pending.json["transaction"] as? [String: Any])
            let id = try #require(tx["id"] as? String)
            let binding = try #require(pending.json["binding"] as? String)
            #expect(tx["status"] as? String == "OTP_REQUIRED" && (tx["methods"] as? [String])?.contains("totp") == true)
            #expect(try await api.call(.delete, "/v1/me/mfa", token: session).code == "reauthentication-required")
            // Not before the factor; not with the session's token instead of the binding secret.
            #expect(try await api.call(.post, "/v1/mfa/transactions/\(id)/session", token: binding).status == 409)
            #expect(try await api.call(.post, "/v1/mfa/transactions/\(id)/session", token: session).status == 401)

            // A wrong passcode leaves it open; the right one completes it; collecting re-authenticates the
            // session that asked (204, no new session), once.
            let wrong = try await api.call(
                .post,
                "/v1/mfa/transactions/\(id)/otp",
                json: ["code": "000000"],
                token: binding
            )
            #expect(wrong.json["status"] as? String == "OTP_REQUIRED")
            h.clock.advance(30)
            let done = try await api.call(
                .post,
                "/v1/mfa/transactions/\(id)/otp",
                json: ["code": try Self.code(secret, h)],
                token: binding
            )
            #expect(done.json["status"] as? String == "COMPLETED", "\(done.json)")
            let collected = try await api.call(.post, "/v1/mfa/transactions/\(id)/session", token: binding)
            #expect(collected.status == 204 && collected.body.isEmpty)
            #expect(
                try await api.call(.post, "/v1/mfa/transactions/\(id)/session", token: binding).status == 409,
                "once"
            )

            #expect(try await api.call(.delete, "/v1/me/mfa", token: session).status == 204)
            // Off now: the password alone re-authenticates again.
            h.clock.advance(11 * 60)
            #expect(
                try await api.call(
                    .post,
                    "/v1/sessions/current/reauth",
                    json: ["password": "correct horse"],
                    token: session
                ).status == 204
            )
            let log = try await Self.outcomes(h, "maria")
            #expect(
                log.contains("reauth password-ok-second-factor-pending") && log.contains("reauth success-code")
                    && log.contains("reauth success")
            )
            #expect(
                log.filter { $0.hasPrefix("sign-in success") }.count == 1,
                "a re-authentication never counts as a new sign-in: \(log)"
            )
        }
    }

    @Test(arguments: Backend.available)
    func aReauthenticationOfAnEndedSessionReauthenticatesNothing(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("nils")
            let session = try await api.token("nils")
            let secret = try #require(
                try await api.call(.post, "/v1/me/mfa/totp", token: session).json["secret"] as? String
            )
            #expect(
                try await api.call(
                    .post,
                    "/v1/me/mfa/totp/confirm",
                    json: ["code": try Self.code(secret, h)],
                    token: session
                ).status == 200
            )
            h.clock.advance(30)
            let pending = try await api.call(
                .post,
                "/v1/sessions/current/reauth",
                json: ["password": "correct horse"],
                token: session
            )
            let id = try #require((pending.json["transaction"] as? [String: Any])?["id"] as? String)
            let binding = try #require(pending.json["binding"] as? String)
            #expect(
                try await api.call(
                    .post,
                    "/v1/mfa/transactions/\(id)/otp",
                    json: ["code": try Self.code(secret, h)],
                    token: binding
                )
                .json["status"] as? String == "COMPLETED"
            )
            #expect(try await api.call(.delete, "/v1/sessions/current", token: session).status == 204)
            let late = try await api.call(.post, "/v1/mfa/transactions/\(id)/session", token: binding)
            #expect(late.status == 401, "the session that asked has ended: \(late.status)")
        }
    }
}
