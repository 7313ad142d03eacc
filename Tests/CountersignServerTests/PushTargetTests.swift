import CountersignAPI
import CountersignClient
import CountersignCrypto
import Crypto
import Foundation
import Testing

@testable import CountersignServer

/// A device's push target (docs/PROTOCOL.md §2.2): which endpoints the server will request (the SSRF rule,
/// from Vectors/push_endpoints.json), what a subscription must be to be stored, and when it goes.
@Suite(.closesStorage) struct PushTargetTests {
    struct Vectors: Decodable {
        struct Address: Decodable {
            let address: String
            let `public`: Bool
        }
        struct Endpoint: Decodable {
            let endpoint: String
            let ok: Bool
            let reason: String?
            let `repeat`: Int?
        }
        let addresses: [Address]
        let endpoints: [Endpoint]
    }

    static let vectors: Vectors = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Vectors/push_endpoints.json")
        return try! JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
    }()

    @Test func addressesArePublicOnlyOutsideTheSpecialPurposeNetworks() throws {
        for v in Self.vectors.addresses {
            let bytes = try #require(TrustedProxies.bytes(v.address), "\(v.address) parses")
            // Parsed the way the resolver hands them over: 16 bytes for IPv6, mapped ones included.
            var raw = in6_addr()
            let asResolved = inet_pton(AF_INET6, v.address, &raw) == 1 ? withUnsafeBytes(of: &raw) { Array($0) } : bytes
            #expect(PushEndpointPolicy.isPublic(asResolved) == v.public, "\(v.address)")
            #expect((PushEndpointPolicy().refusal(addresses: [asResolved]) == nil) == v.public, "\(v.address)")
        }
        // Every address must be public, not just one: a name with a public and a private address is refused.
        let mixed = [TrustedProxies.bytes("8.8.8.8")!, TrustedProxies.bytes("10.0.0.1")!]
        #expect(PushEndpointPolicy().refusal(addresses: mixed) != nil)
        #expect(PushEndpointPolicy().refusal(addresses: []) != nil)
        // Allowed hosts: a name on any port, or on one port.
        let allowed = PushEndpointPolicy(allowedHosts: ["NTFY.internal", "127.0.0.1:8080", "[::1]:9090"])
        #expect(allowed.allows(host: "ntfy.internal", port: 443) && allowed.allows(host: "ntfy.internal", port: 1))
        #expect(!allowed.allows(host: "ntfy.internal.evil", port: 443))
        #expect(allowed.allows(host: "127.0.0.1", port: 8080) && !allowed.allows(host: "127.0.0.1", port: 8081))
        #expect(allowed.allows(host: "[::1]", port: 9090) && !allowed.allows(host: "[::1]", port: 22))
    }

    @Test func endpointsAreCheckedForTheirForm() throws {
        let policy = PushEndpointPolicy(allowedHosts: ["ntfy.internal", "127.0.0.1", "::1"])
        // Stored and requested in one spelling: scheme and host in lower case, the path as given.
        let upper = try policy.check(endpoint: "HTTPS://FCM.GoogleAPIs.com:8443/fcm/Send/AbC?x=Y")
        #expect(upper.text == "https://fcm.googleapis.com:8443/fcm/Send/AbC?x=Y")
        #expect(upper.origin == "https://fcm.googleapis.com:8443" && upper.port == 8443 && !upper.isAddress)
        let v6 = try policy.check(endpoint: "https://[2001:4860::1]/x")
        #expect(v6.origin == "https://[2001:4860::1]" && v6.isAddress && v6.host == "[2001:4860::1]")
        for v in Self.vectors.endpoints {
            let endpoint = v.repeat.map { v.endpoint + String(repeating: "a", count: $0) } ?? v.endpoint
            do {
                _ = try policy.check(endpoint: endpoint)
                #expect(v.ok, "\(v.endpoint) accepted")
            } catch {
                #expect(!v.ok, "\(v.endpoint) refused: \(error)")
                #expect(error == .invalidSubscription(field: "endpoint", reason: v.reason ?? ""), "\(v.endpoint)")
            }
        }
    }

    @Test func settingsAreChecked() {
        #expect(ServerConfiguration.pushHost("ntfy.internal") == "ntfy.internal")
        #expect(ServerConfiguration.pushHost("127.0.0.1") == "127.0.0.1")
        #expect(ServerConfiguration.pushHost("::1") == "::1")
        #expect(ServerConfiguration.pushHost("ntfy.internal:8080") == "ntfy.internal:8080")
        #expect(ServerConfiguration.pushHost("127.0.0.1:8080") == "127.0.0.1:8080")
        #expect(ServerConfiguration.pushHost("[::1]:8080") == "[::1]:8080")
        for bad in [
            "https://ntfy.internal", "ntfy.internal:0", "ntfy.internal:99999", "ntfy.internal/x", "", "a..b", "-a.b",
            "a b", "[::1]", "[nope]:80", "ntfy.internal:",
        ] {
            #expect(ServerConfiguration.pushHost(bad) == nil, "\(bad)")
        }
        #expect(ServerConfiguration.vapidSubject("mailto:ops@example.com") == "mailto:ops@example.com")
        #expect(ServerConfiguration.vapidSubject("https://example.com/contact") == "https://example.com/contact")
        for bad in ["ops@example.com", "mailto:", "http://example.com", "mailto:a@b\nX-Injected: 1", ""] {
            #expect(ServerConfiguration.vapidSubject(bad) == nil, "\(bad)")
        }
    }

    /// A subscription as a browser makes one: a fresh P-256 key and 16-byte secret.
    static func subscription(_ endpoint: String) -> WebPushSubscription {
        let key = P256.KeyAgreement.PrivateKey()
        return WebPushSubscription(
            endpoint: endpoint,
            keys: .init(
                p256dh: Base64URL(Array(key.publicKey.x963Representation)).text,
                auth: Base64URL((0..<16).map { _ in UInt8.random(in: 0...255) }).text
            )
        )
    }

    static func refusal(_ body: () async throws -> Void) async -> ProblemDetails? {
        do {
            try await body()
            return nil
        } catch ClientError.problem(let p) {
            return p
        } catch {
            Issue.record("not a problem: \(error)")
            return nil
        }
    }

    @Test(arguments: Backend.available)
    func badSubscriptionsAreRefusedAndNotStored(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, _ in
            let bob = try await Person.make("bob", server: server)
            let good = Self.subscription("https://142.250.74.10/fcm/send/abc")
            func refused(_ s: WebPushSubscription) async -> ProblemDetails? {
                await Self.refusal { _ = try await bob.sdk.setWebPushSubscription(s) }
            }
            var s = good
            s.endpoint = "http://142.250.74.10/fcm/send/abc"
            #expect(await refused(s)?.field == "endpoint")
            s.endpoint = "https://push.example.com/" + String(repeating: "a", count: 2048)
            let long = await refused(s)
            #expect(long?.status == 422 && long?.field == "endpoint" && long?.detail.contains("1024") == true)
            // The SSRF rule: loopback, private, link-local (the cloud metadata service) are not push services.
            for inside in [
                "https://localhost/push", "https://127.0.0.1:8443/push", "https://10.0.0.7/push",
                "https://169.254.169.254/latest/meta-data", "https://[::1]/push", "https://[fd00::1]/push",
                "https://[::ffff:127.0.0.1]/push", "https://0.0.0.0/push",
            ] {
                s.endpoint = inside
                let p = await refused(s)
                #expect(p?.code == "push-endpoint-refused" && p?.status == 422, "\(inside): \(String(describing: p))")
                #expect(p?.detail.contains("push-allowed-hosts") == true)
            }
            // Keys: off the curve, compressed, wrong length, not base64url; a secret not 16 bytes.
            var point = Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation)
            point[64] ^= 1
            for (p256dh, auth) in [
                (Base64URL(point).text, good.keys.auth),
                (
                    Base64URL(Array(P256.KeyAgreement.PrivateKey().publicKey.compressedRepresentation)).text,
                    good.keys.auth
                ),
                (Base64URL([UInt8](repeating: 4, count: 65)).text, good.keys.auth),
                ("not base64url!", good.keys.auth),
                (good.keys.p256dh, Base64URL([UInt8](repeating: 1, count: 15)).text),
                (good.keys.p256dh, Base64URL([UInt8](repeating: 1, count: 32)).text),
            ] {
                let bad = WebPushSubscription(endpoint: good.endpoint, keys: .init(p256dh: p256dh, auth: auth))
                let p = await refused(bad)
                #expect(p?.status == 422 && p?.field?.hasPrefix("keys.") == true, "\(String(describing: p))")
            }
            #expect(try await bob.sdk.pushTarget() == nil, "nothing refused was stored")
            // Padded base64url, as some browsers write it, is read.
            var padded = good
            padded.keys.auth += "=="
            let info = try await bob.sdk.setWebPushSubscription(padded)
            #expect(info.origin == "https://142.250.74.10" && info.channel == "webpush")
            #expect(try await bob.sdk.pushTarget() == info)
            // Only a device session sets a device's target.
            let account = CountersignClient(server: server, token: bob.sdk.token)
            await #expect(throws: ClientError.self) { _ = try await account.setWebPushSubscription(good) }
            // No APNs key on this server: a device token has nowhere to go.
            let apns = await Self.refusal { _ = try await bob.sdk.setDeviceToken(Data(count: 32), type: .sandbox) }
            #expect(apns?.code == "apns-not-configured" && apns?.status == 409)
            try await bob.sdk.removePushTarget()
            #expect(try await bob.sdk.pushTarget() == nil)
            try await bob.sdk.removePushTarget()  // turning off twice is fine
        }
    }

    @Test(arguments: Backend.available)
    func aRevokedDeviceLosesItsTarget(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let bob = try await Person.make("bob", server: server)
            let phone = try await Person.addDevice("bob", sdk: bob.sdk, name: "phone")
            let shared = Self.subscription("https://142.250.74.10/fcm/send/shared")
            // One browser, one subscription, serving two devices of it.
            try await bob.sdk.setWebPushSubscription(shared)
            try await phone.sdk.setWebPushSubscription(shared)
            try await bob.sdk.revokeDevice(id: phone.device.id)
            #expect(try await h.storage.pushTarget(deviceID: phone.device.id) == nil)
            #expect(try await h.storage.pushTarget(deviceID: bob.device.id) != nil)
            #expect(
                try await h.storage.pushTargets(deviceIDs: [phone.device.id, bob.device.id], now: h.clock.now()).count
                    == 1
            )
            // The push service's 410 for the subscription removes it from every device it served.
            try await h.storage.deletePushTargets(address: shared.endpoint)
            #expect(try await bob.sdk.pushTarget() == nil)
        }
    }
}
