import CountersignAPI
import CountersignCrypto
import Foundation
import Testing

@testable import CountersignServer

/// `GET` and `DELETE /v1/authenticator`: an authenticator's own view of its pairing, and unpairing
/// itself (issue 19, 20), never while it is the account's only second factor.
@Suite(.closesStorage) struct AuthenticatorSelfTests {
    @Test(arguments: Backend.available)
    func statusAndUnpairingItself(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            let (session, phone) = try await MFACodeOnlyTests.paired(api, "quinn")
            let info = try await api.call(.get, "/v1/authenticator", token: phone)
            #expect(
                info.status == 200 && info.json["name"] as? String == "phone"
                    && info.json["pushAllowed"] as? Bool == true
                    && info.json["deviceId"] is String && info.json["pairedAt"] is String,
                "\(info.json)"
            )
            // An ordinary session is not an authenticator's.
            #expect(try await api.call(.get, "/v1/authenticator", token: session).status == 401)

            let only = try await api.call(.delete, "/v1/authenticator", token: phone)
            #expect(only.status == 409 && only.code == "last-second-factor", "\(only.status) \(only.json)")
            #expect(try await api.call(.get, "/v1/authenticator", token: phone).status == 200, "still paired")

            // With a second authenticator it may go: revoked, its session ends, the account keeps the other.
            let key = try #require(
                try await api.call(.post, "/v1/me/mfa/pairing-keys", token: session).json["key"] as? String
            )
            let tablet = Identity.generate()
            let spki = Base64URL(tablet.publicKey.spkiDER).text
            let proof = try tablet.signature(
                for: DeviceProof.pairingMessage(
                    pairingKey: key,
                    signingKey: tablet.publicKey,
                    encryptionKey: tablet.publicKey
                )
            )
            #expect(
                try await api.call(
                    .post,
                    "/v1/authenticators",
                    json: [
                        "pairingKey": key, "name": "tablet", "signingKey": spki,
                        "encryptionKey": spki, "signature": Base64URL(proof).text,
                    ]
                ).status == 201
            )
            #expect(try await api.call(.delete, "/v1/authenticator", token: phone).status == 204)
            #expect(try await api.call(.get, "/v1/authenticator", token: phone).status == 401, "its session ended")
            let status = try await api.call(.get, "/v1/me/mfa", token: session)
            let names = (status.json["authenticators"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
            #expect(names == ["tablet"] && status.json["enabled"] as? Bool == true, "\(status.json)")
            #expect(try await MFAReauthTests.outcomes(h, "quinn").contains("mfa-unpair success"))
        }
    }
}
