import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import JWTKit
import Testing

@testable import CountersignServer

/// A push that nobody answers in time (docs/PROTOCOL.md §3): PingOne's PUSH_CONFIRMATION_TIMED_OUT, with
/// the server's own clock injected.
@Suite(.closesStorage) struct MFATimeoutTests {
    struct Answer: JWTPayload {
        var iss, aud, txn, nonce: String
        var iat: Int64
        var decision: String
        var number: String?
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    @Test(arguments: Backend.available)
    func anUnansweredPushTimesOutAndALateAnswerIsRefused(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            let paired = try await SecondFactorGuessingTests.pairPhone(api, "olga")
            let phone = paired.identity
            let deviceID = paired.deviceID
            let deviceToken = paired.token

            let pending = try await api.signIn("olga")
            #expect(pending.status == 202)
            let tx = try #require(pending.json["transaction"] as? [String: Any])
            let id = try #require(tx["id"] as? String)
            let binding = try #require(pending.json["binding"] as? String)
            let number = try #require((tx["numberMatching"] as? [String: Any])?["number"] as? String)
            #expect(tx["status"] as? String == "PUSH_CONFIRMATION_REQUIRED")
            let challenges =
                try await api.call(.get, "/v1/authenticator/challenges", token: deviceToken).json["challenges"]
                as? [[String: Any]]
            let jwt = try #require(challenges?.first?["jwt"] as? String)
            let payload = try #require(Base64URL(text: String(jwt.split(separator: ".")[1])))
            let claims = try #require(try JSONSerialization.jsonObject(with: Data(payload.bytes)) as? [String: Any])

            // A minute passes with no answer.
            h.clock.advance(61)
            let late = try await api.call(.get, "/v1/mfa/transactions/\(id)?wait=5", token: binding)
            #expect(
                late.json["status"] as? String == "PUSH_CONFIRMATION_TIMED_OUT"
                    && (late.json["methods"] as? [String]) == []
            )
            #expect(
                (try await api.call(.get, "/v1/authenticator/challenges", token: deviceToken).json["challenges"]
                    as? [Any])?.isEmpty == true
            )
            let keys = JWTKeyCollection()
            await keys.add(
                ecdsa: try ES256PrivateKey(backing: P256.Signing.PrivateKey(rawRepresentation: phone.privateScalar))
            )
            let answer = try await keys.sign(
                Answer(
                    iss: deviceID,
                    aud: try #require(claims["iss"] as? String),
                    txn: id,
                    nonce: try #require(claims["nonce"] as? String),
                    iat: Int64(h.clock.now().timeIntervalSince1970),
                    decision: "APPROVE",
                    number: number
                )
            )
            let refused = try await api.call(
                .post,
                "/v1/authenticator/answers",
                json: ["jwt": answer],
                token: deviceToken
            )
            #expect(
                refused.status == 409 && refused.code == "answer-refused"
                    && refused.json["pingOneError"] as? Int == 10009,
                "\(refused.json)"
            )
            let collect = try await api.call(.post, "/v1/mfa/transactions/\(id)/session", token: binding)
            #expect(collect.status == 409 && collect.code == "mfa-not-completed")
        }
    }
}
