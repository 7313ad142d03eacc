import CountersignAPI
import CountersignClient
import CountersignCrypto
import CountersignTestSupport
import Crypto
import Foundation
import Testing

@testable import CountersignServer

/// The server as an APNs provider (docs/PROTOCOL.md §2.3) against Tests/interop/fake_apns.py: HTTP/2 over TLS
/// with a test CA, the provider token checked by PyJWT against the test .p8's public key, the headers and the
/// payload; a sandbox token goes to the sandbox endpoint; 410 removes the token, 429 is tried again, a push
/// refused for an expired provider token is tried again once; the token is made once, not per push; one
/// connection per environment.
@Suite(.closesStorage) struct APNsDeliveryTests {
    struct Entry: Decodable {
        let env: String
        let connection: Bool?
        let token: String?
        let topic: String?
        let pushType: String?
        let priority: String?
        let expiration: String?
        let collapseId: String?
        let jwt: String?
        let kid: String?
        let status: Int?
        let reason: String?
        let error: String?
    }

    static func entries(_ dir: URL) -> [Entry] {
        guard let text = try? String(contentsOf: dir.appendingPathComponent("log.jsonl"), encoding: .utf8) else {
            return []
        }
        return text.split(separator: "\n").compactMap { try? JSONDecoder().decode(Entry.self, from: Data($0.utf8)) }
    }

    /// The payloads recorded, by token (read apart: they are JSON objects of any shape).
    static func payloads(_ dir: URL) -> [(token: String, payload: [String: Any])] {
        guard let text = try? String(contentsOf: dir.appendingPathComponent("log.jsonl"), encoding: .utf8) else {
            return []
        }
        return text.split(separator: "\n").compactMap { line in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let token = o["token"] as? String, let payload = o["payload"] as? [String: Any]
            else { return nil }
            return (token, payload)
        }
    }

    static func waitFor(_ dir: URL, seconds: Double = 30, _ done: ([Entry]) -> Bool) async throws -> [Entry] {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while true {
            let e = entries(dir)
            if done(e) || ContinuousClock.now > deadline { return e }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    static func token(_ prefix: String) -> String { prefix + String(repeating: "0", count: 64 - prefix.count) }

    @Test(arguments: Backend.available)
    func pushesReachAPNsSignedOnceWithLocalizationKeysOnly(_ backend: Backend) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cs-apns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let key = P256.Signing.PrivateKey()
        try key.publicKey.pemRepresentation.write(
            to: dir.appendingPathComponent("public.pem"),
            atomically: true,
            encoding: .utf8
        )
        let apns = try InteropScript(
            script: "fake_apns.py",
            [dir.path, "ABCDE12345", "TEAM123456", dir.appendingPathComponent("public.pem").path]
        )
        defer { withExtendedLifetime(apns) {} }
        try #require(apns.ports.count == 2)
        let (production, sandbox) = (apns.ports[0], apns.ports[1])
        var settings = try APNsSettings(
            keyPEM: key.pemRepresentation,
            keyID: "ABCDE12345",
            teamID: "TEAM123456",
            topic: "com.example.countersign"
        )
        settings.production = URL(string: "https://localhost:\(production)")!
        settings.sandbox = URL(string: "https://localhost:\(sandbox)")!
        settings.caFile = dir.appendingPathComponent("ca.pem").path
        let configured = settings
        // PyJWT checks iat against its own clock: the server's is the real time here.
        try await withLiveServer(backend, clock: ManualClock(Date()), configure: { $0.apns = configured }) {
            server,
            h in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            let phone = try await Person.addDevice("bob", sdk: bob.sdk, name: "phone")
            let tablet = try await Person.addDevice("bob", sdk: bob.sdk, name: "tablet")
            let watch = try await Person.addDevice("bob", sdk: bob.sdk, name: "watch")
            let ipad = try await Person.addDevice("bob", sdk: bob.sdk, name: "ipad")
            let set = try await bob.sdk.setDeviceToken(Data(Hex.decode(Self.token("aaaa"))!), type: .production)
            #expect(set.channel == "apns" && set.environment == "production" && set.origin == nil)
            try await phone.sdk.setDeviceToken(Data(Hex.decode(Self.token("bbbb"))!), type: .sandbox)
            try await tablet.sdk.setDeviceToken(Data(Hex.decode(Self.token("dead"))!), type: .production)
            try await watch.sdk.setDeviceToken(Data(Hex.decode(Self.token("4290"))!), type: .production)
            try await ipad.sdk.setDeviceToken(Data(Hex.decode(Self.token("e403"))!), type: .production)

            let first = try await alice.send("hi", to: ["bob"])
            var log = try await Self.waitFor(dir) { e in
                e.filter { $0.status == 200 }.count >= 4 && e.contains { $0.status == 410 }
            }
            #expect(log.allSatisfy { $0.error == nil }, "\(log.compactMap(\.error))")
            let pushes = log.filter { $0.connection != true }
            let byToken = Dictionary(grouping: pushes, by: { String($0.token!.prefix(4)) })
            #expect(byToken["aaaa"]?.map(\.env) == ["production"])
            #expect(byToken["bbbb"]?.map(\.env) == ["sandbox"], "a sandbox token goes to the sandbox")
            #expect(byToken["dead"]?.map(\.status) == [410])
            #expect(byToken["4290"]?.map(\.status) == [429, 200], "429 is tried again")
            #expect(byToken["e403"]?.map(\.reason) == ["ExpiredProviderToken", nil], "tried again, once")
            for p in pushes {
                #expect(p.topic == "com.example.countersign" && p.pushType == "alert" && p.priority == "5")
                #expect(p.collapseId == nil && p.kid == "ABCDE12345")
                // A day after the server's clock (which the test holds still).
                #expect(Int(p.expiration ?? "") == Int(h.clock.now().timeIntervalSince1970) + 86_400)
            }
            // The provider token is made once for every push (an "expired" one minutes old is not made again: APNs
            // refuses new ones more often than every 20 minutes).
            #expect(Set(pushes.compactMap(\.jwt)).count == 1, "\(Set(pushes.compactMap(\.jwt)).count)")
            // Localization keys and the message's id; nothing of the message.
            for (token, payload) in Self.payloads(dir) where token.hasPrefix("aaaa") {
                let aps = try #require(payload["aps"] as? [String: Any])
                let alert = try #require(aps["alert"] as? [String: String])
                #expect(alert == ["title-loc-key": "message.title", "loc-key": "message.body"])
                #expect(aps["category"] as? String == "MESSAGE" && aps["mutable-content"] as? Int == 1)
                #expect(aps["interruption-level"] == nil)
                #expect(payload["countersign"] as? [String: String] == ["kind": "message", "id": first.id])
                #expect(Set(payload.keys) == ["aps", "countersign"])
            }
            // Apple said the tablet's token is gone: deleted.
            var gone: PushTargetInfo? = try await tablet.sdk.pushTarget()
            for _ in 0..<50 where gone != nil {
                try await Task.sleep(for: .milliseconds(100))
                gone = try await tablet.sdk.pushTarget()
            }
            #expect(gone == nil)

            _ = try await alice.send("again", to: ["bob"])
            log = try await Self.waitFor(dir) { e in e.filter { $0.token?.hasPrefix("aaaa") == true }.count >= 2 }
            try await Task.sleep(for: .milliseconds(500))
            log = Self.entries(dir)
            #expect(log.filter { $0.token?.hasPrefix("dead") == true }.count == 1, "nothing more to a gone token")
            // One HTTP/2 connection per environment, every push multiplexed over it.
            #expect(log.filter { $0.connection == true && $0.env == "production" }.count == 1)
            #expect(log.filter { $0.connection == true && $0.env == "sandbox" }.count == 1)
        }
    }

    @Test func approvalsAreTimeSensitiveInTheirCategoryWithPingOnesKeys() throws {
        let bytes = APNsPayload.encode(kind: "approval", id: "txn1", device: "dev1", timeSensitive: true)
        let payload = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        let aps = try #require(payload["aps"] as? [String: Any])
        #expect(
            aps["alert"] as? [String: String] == [
                "title-loc-key": "notification.title", "loc-key": "notification.message",
            ]
        )
        #expect(aps["category"] as? String == RemoteNotification.Category.approval)
        #expect(aps["interruption-level"] as? String == "time-sensitive")
        #expect(payload["countersign"] as? [String: String] == ["kind": "approval", "id": "txn1", "device": "dev1"])
        let active = APNsPayload.encode(kind: "approval", id: "txn1", device: "dev1", timeSensitive: false)
        let quiet = try #require(try JSONSerialization.jsonObject(with: Data(active)) as? [String: Any])
        #expect((quiet["aps"] as? [String: Any])?["interruption-level"] as? String == "active")
        #expect(RemoteNotification.LocalizationKey.english["notification.title"] == "New Authentication")
    }

    @Test func settingsAreChecked() throws {
        let pem = P256.Signing.PrivateKey().pemRepresentation
        #expect(throws: APNsSettings.Invalid.self) {
            try APNsSettings(keyPEM: "not a key", keyID: "ABCDE12345", teamID: "TEAM123456", topic: "com.example.app")
        }
        let rsaLike = P384.Signing.PrivateKey().pemRepresentation
        #expect(throws: APNsSettings.Invalid.self) {
            try APNsSettings(keyPEM: rsaLike, keyID: "ABCDE12345", teamID: "TEAM123456", topic: "com.example.app")
        }
        for (keyID, teamID, topic) in [
            ("abcde12345", "TEAM123456", "com.example.app"), ("ABCDE1234", "TEAM123456", "com.example.app"),
            ("ABCDE12345", "TEAM 12345", "com.example.app"), ("ABCDE12345", "TEAM123456", "app"),
        ] {
            #expect(throws: APNsSettings.Invalid.self) {
                try APNsSettings(keyPEM: pem, keyID: keyID, teamID: teamID, topic: topic)
            }
        }
        let ok = try APNsSettings(keyPEM: pem, keyID: "ABCDE12345", teamID: "TEAM123456", topic: "com.example.app")
        #expect(ok.endpoint("sandbox").host == "api.sandbox.push.apple.com")
        #expect(ok.endpoint("production").host == "api.push.apple.com")
    }
}
