import CountersignAPI
import CountersignClient
import CountersignCrypto
import Foundation
import Synchronization
import Testing

@testable import CountersignServer

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sessions end when they should, and what runs on their behalf ends with them (issue 19, 9): a long
/// poll, the other sessions of a device whose keys were rotated, every device session of a locked
/// account; and an authenticator's session is not a messaging device's.
@Suite(.closesStorage) struct SessionEndingTests {
    /// A raw request with a bearer token: status and body.
    static func call(
        _ method: String,
        _ url: URL,
        token: String,
        json: [String: Any]? = nil
    ) async throws -> (Int, [String: Any]) {
        let (status, data) = try await raw(method, url, token: token, json: json)
        return (status, (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:])
    }

    static func raw(_ method: String, _ url: URL, token: String, json: [String: Any]? = nil) async throws -> (Int, Data)
    {
        var r = URLRequest(url: url)
        r.httpMethod = method
        r.timeoutInterval = 60
        r.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        if let json {
            r.httpBody = try JSONSerialization.data(withJSONObject: json)
            r.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: r)
        return ((response as! HTTPURLResponse).statusCode, data)
    }

    /// Sign-out-everywhere while a device's long poll waits: the poll answers 401 at once, and a message
    /// sent after the sign-out is not handed to it.
    @Test(arguments: Backend.available)
    func aLongPollEndsWithItsSession(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, _ in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            let token = try #require(alice.sdk.deviceToken)
            let started = ContinuousClock.now
            let poll = Task {
                try await Self.raw(
                    "GET",
                    server.appendingPathComponent("v1/devices/current/messages").appending(queryItems: [
                        .init(name: "wait", value: "30")
                    ]),
                    token: token
                )
            }
            try await Task.sleep(for: .milliseconds(500))  // the poll is waiting
            try await alice.sdk.signOutEverywhere()
            _ = try await bob.send("after you signed out", to: ["alice"])
            let (status, body) = try await poll.value
            #expect(status == 401, "\(status) \(String(decoding: body, as: UTF8.self))")
            // Below the 30 s wait, with room for a loaded machine (11.5 s seen at load average 26).
            #expect(
                ContinuousClock.now - started < .seconds(25),
                "answered when the session ended, not at the end of its wait"
            )
        }
    }

    /// Rotating a device's keys ends every other session of that device (a thief who had the old key
    /// keeps nothing); the rotating session goes on.
    @Test(arguments: Backend.available)
    func aKeyRotationEndsTheDevicesOtherSessions(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, _ in
            let owner = try await Person.make("carol", server: server)
            let thief = CountersignClient(server: server)
            try await thief.openDeviceSession(deviceID: owner.device.id, signing: owner.identity)
            #expect(try await thief.fetchMessages().messages.isEmpty)
            let next = Identity.generate()
            _ = try await owner.sdk.rotateKeys(
                deviceID: owner.device.id,
                old: owner.identity,
                newSigning: next,
                newEncryptionKey: next.publicKey
            )
            await #expect(throws: ClientError.self) { _ = try await thief.fetchMessages() }
            #expect(try await owner.sdk.fetchMessages().messages.isEmpty, "the rotating session is kept")
        }
    }

    /// An authenticator's device session is refused on every messaging route (403), and changes nothing.
    @Test(arguments: Backend.available)
    func anAuthenticatorCannotUseTheMessagingRoutes(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, _ in
            let dora = try await Person.make("dora", server: server)
            let accountToken = try #require(dora.sdk.token)
            let (_, key) = try await Self.call(
                "POST",
                server.appendingPathComponent("v1/me/mfa/pairing-keys"),
                token: accountToken,
                json: [:]
            )
            let pairing = try #require(key["key"] as? String, "\(key)")
            let (_, info) = try await CountersignAuthenticator.pair(
                pairing,
                server: server,
                name: "phone",
                identity: Identity.generate()
            )
            let token = info.session.token
            // A delayed message of the account's messaging device, which the authenticator must not cancel.
            let delayed = try await dora.send("later", to: ["dora"], after: 3600)
            let v1 = server.appendingPathComponent("v1")
            for (method, url, body) in [
                ("GET", v1.appendingPathComponent("devices/current/messages"), nil),
                ("POST", v1.appendingPathComponent("devices/current/acks"), ["seqs": [1]]),
                ("GET", v1.appendingPathComponent("messages/\(delayed.id)"), nil),
                ("DELETE", v1.appendingPathComponent("messages/\(delayed.id)"), nil),
                ("POST", v1.appendingPathComponent("messages"), ["to": ["dora"], "envelope": "AAAA"]),
            ] as [(String, URL, [String: Any]?)] {
                let (status, problem) = try await Self.call(method, url, token: token, json: body)
                #expect(
                    status == 403 && problem["code"] as? String == "not-a-messaging-device",
                    "\(method) \(url.path): \(status) \(problem)"
                )
            }
            #expect(try await dora.sdk.messageStatus(id: delayed.id).cancelled == false)
        }
    }

    /// Locking an account by failed second factors ends its device sessions too (their push connections
    /// close through the same ending).
    @Test(arguments: Backend.available)
    func aLockEndsTheAccountsDeviceSessions(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let erin = try await Person.make("erin", server: server)
            let accountToken = try #require(erin.sdk.token)
            let (_, enrolled) = try await Self.call(
                "POST",
                server.appendingPathComponent("v1/me/mfa/totp"),
                token: accountToken,
                json: [:]
            )
            let secret = try #require(enrolled["secret"] as? String)
            let (confirmed, _) = try await Self.call(
                "POST",
                server.appendingPathComponent("v1/me/mfa/totp/confirm"),
                token: accountToken,
                json: ["code": try MFAReauthTests.code(secret, h)]
            )
            #expect(confirmed == 200)
            let ended = EndingLog()
            h.endings.observe { ended.append($0) }
            h.clock.advance(30)
            let wrong = try MFAReauthTests.code(secret, h) == "000000" ? "111111" : "000000"
            for _ in 0..<5 {
                let anonymous = CountersignClient(server: server)
                var pending: (id: String, binding: String)?
                do {
                    _ = try await anonymous.signIn(username: "erin", password: "correct horse")
                } catch ClientError.secondFactorRequired(let required) {
                    pending = (required.transaction.id, required.binding)
                }
                let tx = try #require(pending)
                var r = URLRequest(url: server.appendingPathComponent("v1/mfa/transactions/\(tx.id)/otp"))
                r.httpMethod = "POST"
                r.setValue("Bearer \(tx.binding)", forHTTPHeaderField: "Authorization")
                r.setValue("application/json", forHTTPHeaderField: "Content-Type")
                r.httpBody = try JSONSerialization.data(withJSONObject: ["code": wrong])
                _ = try await URLSession.shared.data(for: r)
                h.clock.advance(30 * 60 + 1)
            }
            #expect(try #require(try await h.store.loginGuard(username: "erin")).locked)
            await #expect(throws: ClientError.self) { _ = try await erin.sdk.fetchMessages() }
            let account = try #require(try await h.store.account(username: "erin"))
            #expect(ended.all.contains(.account(account.id)), "\(ended.all)")
            // Nor does the device's key open a new one until an administrator unlocks.
            let sessions = try await SessionStartTests.count(h, "device_sessions", account.id)
            let refused = await #expect(throws: ClientError.self) {
                _ = try await erin.sdk.openDeviceSession(deviceID: erin.device.id, signing: erin.identity)
            }
            #expect(refused?.code == .accountLocked, "\(String(describing: refused))")
            #expect(try await SessionStartTests.count(h, "device_sessions", account.id) == sessions)
            #expect(try await h.store.unlock(username: "erin"))
            _ = try await erin.sdk.openDeviceSession(deviceID: erin.device.id, signing: erin.identity)
            _ = try await erin.sdk.fetchMessages()
        }
    }
}

extension SessionEndingTests {
    /// A lock ends the account's pairing keys, and a key that lands after it (issued by a request already
    /// past its session check) pairs nothing: spent, and 423.
    @Test(arguments: Backend.available)
    func aLockedAccountPairsNoAuthenticator(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let fay = try await Person.make("fay", server: server)
            let (_, issued) = try await Self.call(
                "POST",
                server.appendingPathComponent("v1/me/mfa/pairing-keys"),
                token: try #require(fay.sdk.token),
                json: [:]
            )
            let before = try #require(issued["key"] as? String, "\(issued)")
            let account = try #require(try await h.store.account(username: "fay"))
            let policy = h.config.lockout
            while try await h.store.countSignInFailure(username: "fay", policy: policy, now: h.clock.now()) != .locked {
                h.clock.advance(policy.delay + 1)
            }
            let devices = try await SessionStartTests.count(h, "devices", account.id)
            await #expect(throws: PingOneError.pairingKey, "the lock deleted it (PingOne 10005)") {
                _ = try await CountersignAuthenticator.pair(before, server: server, name: "p", identity: .generate())
            }

            let (late, _) = PairingKey.make(accountID: account.id, now: h.clock.now(), random: SystemRandomSource())
            #expect(
                try await h.store.createPairingKey(
                    hash: PairingKey.hash(late),
                    accountID: account.id,
                    expiresAt: h.clock.now().addingTimeInterval(600),
                    maxOpen: 3,
                    now: h.clock.now()
                )
            )
            let locked = await #expect(throws: ClientError.self) {
                _ = try await CountersignAuthenticator.pair(late, server: server, name: "p", identity: .generate())
            }
            #expect(locked?.code == .accountLocked, "\(String(describing: locked))")
            #expect(try await SessionStartTests.count(h, "devices", account.id) == devices)
            #expect(try await SessionStartTests.count(h, "pairing_keys", account.id) == 0, "spent all the same")
        }
    }
}

final class EndingLog: Sendable {
    private let items = Mutex<[SessionEnding]>([])
    func append(_ e: SessionEnding) { items.withLock { $0.append(e) } }
    var all: [SessionEnding] { items.withLock { $0 } }
}
