import CountersignAPI
import CountersignClient
import CountersignCrypto
import Crypto
import Foundation
import Testing

@testable import CountersignServer

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The server's part of the browser's key gate (docs/SPEC.md §14.5), on both backends: a device keeps
/// the hash of a revocation token; presenting the token revokes the device, whoever presents it; the
/// gate's events are audited from closed sets.
@Suite(.closesStorage) struct KeyGateAPITests {
    static func call(
        _ server: URL,
        _ method: String,
        _ path: String,
        token: String? = nil,
        json: [String: Any]
    ) async throws -> (Int, [String: Any]) {
        var request = URLRequest(url: server.appendingPathComponent(path))
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        request.httpBody = try JSONSerialization.data(withJSONObject: json)
        let (data, response) = try await URLSession.shared.data(for: request)
        let body = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, body)
    }

    @Test(arguments: Backend.available)
    func aRevocationTokenEndsItsDeviceOnceAndNothingElse(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let alice = try await Person.make("gatealice", server: server)
            let mallory = try await Person.make("gatemallory", server: server)
            let session = try #require(alice.sdk.token)
            let token = (0..<32).map { _ in UInt8.random(in: 0...255) }
            let path = "/v1/devices/\(alice.device.id)"
            let accountID = try #require(try await h.storage.account(username: "gatealice")).id
            /// The body that sets `token` on `device`, signed by `signer`.
            func setting(_ token: [UInt8], device: String, signer: Identity) throws -> [String: Any] {
                let message = DeviceProof.revocationTokenMessage(
                    deviceID: device,
                    accountID: accountID,
                    tokenHash: Array(SHA256.hash(data: token))
                )
                return [
                    "token": Base64URL(token).text, "signature": Base64URL(try signer.signature(for: message)).text,
                ]
            }
            func put(_ json: [String: Any]) async throws -> (Int, [String: Any]) {
                try await Self.call(server, "PUT", path + "/revocation-token", token: session, json: json)
            }
            // The token is 32 bytes, and only for the account's own device.
            var r = try await put(try setting([1, 2], device: alice.device.id, signer: alice.identity))
            #expect(r.0 == 422 && r.1["field"] as? String == "token")
            r = try await Self.call(
                server,
                "PUT",
                "/v1/devices/\(mallory.device.id)/revocation-token",
                token: session,
                json: try setting(token, device: mallory.device.id, signer: mallory.identity)
            )
            #expect(r.0 == 404, "another account's device")
            // Issue 33: only the device itself sets it. Unsigned, signed by another key (another device of
            // the account, say), or signed over another token: refused, and nothing is set.
            r = try await put(["token": Base64URL(token).text])
            #expect(r.0 == 400, "no signature: \(r)")
            var other = token
            other[0] ^= 1
            for bad in [
                try setting(token, device: alice.device.id, signer: Identity.generate()),
                try setting(token, device: alice.device.id, signer: mallory.identity),
                [
                    "token": Base64URL(token).text,
                    "signature": try setting(other, device: alice.device.id, signer: alice.identity)["signature"]!,
                ],
            ] {
                r = try await put(bad)
                #expect(r.0 == 422 && r.1["code"] as? String == "bad-signature", "\(r)")
            }
            r = try await Self.call(server, "POST", path + "/self-revocation", json: ["token": Base64URL(token).text])
            #expect(r.0 == 404, "the refused tokens were not set")
            // A session that has not authenticated recently may not set it (as it may not revoke).
            r = try await Self.call(
                server,
                "PUT",
                "/v1/me/settings",
                token: session,
                json: ["reauthIntervalMinutes": 10]
            )
            #expect(r.0 == 200, "\(r)")
            h.clock.advance(11 * 60)
            r = try await put(try setting(token, device: alice.device.id, signer: alice.identity))
            #expect(r.0 == 401 && r.1["code"] as? String == "reauthentication-required", "\(r)")
            h.clock.advance(-11 * 60)
            r = try await put(try setting(token, device: alice.device.id, signer: alice.identity))
            #expect(r.0 == 204)
            // A wrong token, or none set, revokes nothing, and says no more than "not found".
            var wrong = token
            wrong[31] ^= 1
            r = try await Self.call(server, "POST", path + "/self-revocation", json: ["token": Base64URL(wrong).text])
            #expect(r.0 == 404)
            r = try await Self.call(
                server,
                "POST",
                "/v1/devices/\(mallory.device.id)/self-revocation",
                json: ["token": Base64URL(token).text]
            )
            #expect(r.0 == 404)
            _ = try await alice.sdk.fetchMessages()
            // The right one, with no session at all: revoked, its session ended.
            r = try await Self.call(server, "POST", path + "/self-revocation", json: ["token": Base64URL(token).text])
            #expect(r.0 == 204)
            await #expect(throws: (any Error).self) { _ = try await alice.sdk.fetchMessages() }
            r = try await Self.call(server, "POST", path + "/self-revocation", json: ["token": Base64URL(token).text])
            #expect(r.0 == 404, "once")
            let device = try #require(try await h.storage.device(id: alice.device.id))
            #expect(device.revokedAt != nil)
            #expect(try await h.storage.device(id: mallory.device.id)?.revokedAt == nil)
            let account = try #require(try await h.storage.account(username: "gatealice"))
            let audit = try await h.storage.auditEvents(accountID: account.id, before: nil, limit: 20)
            #expect(audit.contains { $0.kind == "device-revoke" && $0.outcome == "self-revoked" })
            #expect(audit.contains { $0.kind == "key-gate" && $0.outcome == "revocation-token-set" })
        }
    }

    @Test(arguments: Backend.available)
    func gateEventsAreAuditedFromClosedSetsAndLimited(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let alice = try await Person.make("gateevents", server: server)
            let session = try #require(alice.sdk.token)
            var r = try await Self.call(
                server,
                "POST",
                "/v1/me/key-gate/events",
                token: session,
                json: ["event": "unlock-failed", "method": "password"]
            )
            #expect(r.0 == 204)
            let account = try #require(try await h.storage.account(username: "gateevents"))
            let first = try await h.storage.auditEvents(accountID: account.id, before: nil, limit: 1)
            #expect(first.map { "\($0.kind) \($0.outcome)" } == ["key-gate unlock-failed-password"])
            r = try await Self.call(
                server,
                "POST",
                "/v1/me/key-gate/events",
                token: session,
                json: ["event": "method-added", "method": "prf"]
            )
            let added = try await h.storage.auditEvents(accountID: account.id, before: nil, limit: 1)
            #expect(r.0 == 204 && added.map(\.outcome) == ["method-added-prf"])
            for (event, method, field) in [("deleted-everything", "prf", "event"), ("unlocked", "face", "method")] {
                r = try await Self.call(
                    server,
                    "POST",
                    "/v1/me/key-gate/events",
                    token: session,
                    json: ["event": event, "method": method]
                )
                #expect(r.0 == 422 && r.1["field"] as? String == field)
            }
            r = try await Self.call(
                server,
                "POST",
                "/v1/me/key-gate/events",
                json: ["event": "wiped", "method": "prf"]
            )
            #expect(r.0 == 401)
            var limited = 0
            for _ in 0..<120 {
                let s = try await Self.call(
                    server,
                    "POST",
                    "/v1/me/key-gate/events",
                    token: session,
                    json: ["event": "unlocked", "method": "prf"]
                ).0
                if s == 429 { limited += 1 }
            }
            #expect(limited == 2, "120 an hour, two already spent")
            let audit = try await h.storage.auditEvents(accountID: account.id, before: nil, limit: 100)
            #expect(audit.filter { $0.kind == "key-gate" && $0.outcome == "unlocked-prf" }.count >= 98)
        }
    }
}
