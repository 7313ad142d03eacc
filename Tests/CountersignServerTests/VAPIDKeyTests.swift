import CountersignAPI
import CountersignTestSupport
import Crypto
import Foundation
import Synchronization
import Testing

@testable import CountersignServer

/// The server's VAPID key (RFC 8292, docs/PROTOCOL.md §2.1) on both backends: made once and the same after a
/// restart, its private half sealed in the database, its public half served for browsers to subscribe with,
/// and the push JWT it signs checked by Python's `cryptography` (signature, `aud`, `exp`, `sub`).
@Suite(.closesStorage) struct VAPIDKeyTests {
    @Test(arguments: Backend.available)
    func oneKeySealedServedAndSigningWhatPythonVerifies(_ backend: Backend) async throws {
        let location = try backend.freshLocation()
        let first = try await Harness.make(backend, location: location)
        let served = Mutex<[UInt8]>([])
        try await first.run { api in
            let reply = try await api.call(.get, "/v1/push/vapid-key")
            #expect(reply.status == 200)
            let key = try APICoding.decoder().decode(VAPIDPublicKey.self, from: reply.body).publicKey.bytes
            #expect(key.count == 65 && key.first == 0x04 && key == first.services.vapid.publicKey)
            served.withLock { $0 = key }
            // Sealed at rest: the stored row is not the private scalar, and opens only with its seal.
            let row = try await first.storage.serverSecret(name: "vapid-private-key") { [] }
            #expect(row.count == 12 + 32 + 16)
            #expect(row != Array(first.services.vapid.privateKey.rawRepresentation))
        }
        let second = try await Harness.make(backend, location: location)
        try await second.run { api in
            let again = try await api.call(.get, "/v1/push/vapid-key")
            let key = try APICoding.decoder().decode(VAPIDPublicKey.self, from: again.body).publicKey.bytes
            #expect(key == served.withLock { $0 }, "the same key after a restart")
            let now = Date(timeIntervalSince1970: 1_900_000_000)
            let header = try second.services.vapid.authorization(
                audience: "https://push.example.net:8443",
                subject: "mailto:ops@example.com",
                now: now
            )
            let script = """
                import base64, json, sys
                from cryptography.hazmat.primitives.asymmetric import ec, utils
                from cryptography.hazmat.primitives import hashes
                d = lambda x: base64.urlsafe_b64decode(x + "=" * (-len(x) % 4))
                header = sys.argv[1]
                t = header.split("t=")[1].split(",")[0]
                k = header.split("k=")[1]
                key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), d(k))
                h, c, s = t.split(".")
                raw = d(s)
                sig = utils.encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
                key.verify(sig, (h + "." + c).encode(), ec.ECDSA(hashes.SHA256()))
                print(json.dumps({"header": json.loads(d(h)), "claims": json.loads(d(c)), "k": k}))
                """
            let r = try Spawned.run("/usr/bin/env", ["python3", "-c", script, header])
            try #require(r.status == 0, "\(String(decoding: r.stderr, as: UTF8.self))")
            let out = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any])
            let claims = try #require(out["claims"] as? [String: Any])
            #expect((out["header"] as? [String: String]) == ["typ": "JWT", "alg": "ES256"])
            #expect(claims["aud"] as? String == "https://push.example.net:8443")
            #expect(claims["sub"] as? String == "mailto:ops@example.com")
            #expect(claims["exp"] as? Int == 1_900_000_000 + 12 * 3600)
            #expect(out["k"] as? String == Base64URL(key).text)
        }
    }
}
