import CountersignAPI
import CountersignClient
import CountersignCrypto
import Foundation
import SQLKit
import Testing

@testable import CountersignServer

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// QR sign-in (issue 19, 4): an approved code gives a locked account nothing, and its session (the
/// authenticator alone, no password) changes no second factor until it re-authenticates.
@Suite(.closesStorage) struct QRSignInTests {
    /// An account with a paired authenticator, and a waiting screen's code the authenticator approved.
    static func approved(
        _ username: String,
        server: URL
    ) async throws -> (screen: CountersignClient, created: AuthCodeCreated, account: Person) {
        let person = try await Person.make(username, server: server)
        let phone = try await person.pairAuthenticator(server: server)
        let screen = CountersignClient(server: server)
        let created = try await screen.createAuthCode()
        let claim = try await phone.authenticate(authCode: created.code)
        #expect(try await claim.approve(userId: claim.users[0].userId) == "COMPLETED")
        return (screen, created, person)
    }

    /// The waiting screen long-polls: a claim and an approval each answer a waiting poll at once (on
    /// PostgreSQL through NOTIFY), a final status answers without waiting, and a bad `wait` is a 400.
    @Test(arguments: Backend.available)
    func theWaitingScreenLongPollsEachChange(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let person = try await Person.make("wanda", server: server)
            let phone = try await person.pairAuthenticator(server: server)
            let screen = CountersignClient(server: server)
            let created = try await screen.createAuthCode()
            #expect(try await screen.authCodeState(created).status == "PENDING")
            // Well inside the 30 s wait, with a 4 s head start for the poll's first read on a loaded machine (a first
            // read after the change would wait out the 30 s and fail the bound).
            func changed<T>(after action: () async throws -> T) async throws -> (String, Double, T) {
                let began = ContinuousClock.now
                async let answer = screen.authCodeState(created, wait: 30)
                try await Task.sleep(for: .seconds(4))
                let done = try await action()
                let status = try await answer.status
                let took = ContinuousClock.now - began
                return (status, Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18, done)
            }
            let (first, firstTook, claim) = try await changed { try await phone.authenticate(authCode: created.code) }
            #expect(first == "CLAIMED" && firstTook < 25, "\(first) after \(firstTook) s")
            let (second, secondTook, _) = try await changed { try await claim.approve(userId: claim.users[0].userId) }
            #expect(second == "COMPLETED" && secondTook < 25, "\(second) after \(secondTook) s")
            let began = ContinuousClock.now
            #expect(try await screen.authCodeState(created, wait: 30).status == "COMPLETED")
            #expect(ContinuousClock.now - began < .seconds(20), "a final status answers at once")
            for wait in ["31", "-1", "x"] {
                let (status, body) = try await Self.rawState(server, created, wait: wait)
                #expect(status == 400 && body.contains("wait must be 0 to 30 seconds"), "\(wait): \(status) \(body)")
            }

            // An unclaimed code's poll ends at its expiry with EXPIRED.
            let other = try await screen.createAuthCode()
            h.clock.advance(AuthenticationCode.defaultLifetime + 1)
            #expect(try await screen.authCodeState(other, wait: 30).status == "EXPIRED")
        }
    }

    /// An anonymous binding cannot hold many waiting requests: past `LongPoll.maxWaitersPerKey` on one code,
    /// a poll answers at once (the others still wait their full time, as nothing changes).
    @Test(arguments: Backend.available)
    func oneCodeHoldsAFewWaitingPollsAtMost(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, _ in
            let screen = CountersignClient(server: server)
            let created = try await screen.createAuthCode()
            let n = LongPoll<AuthCodeState>.maxWaitersPerKey + 3
            let took = try await withThrowingTaskGroup(of: Double.self) { group in
                for _ in 0..<n {
                    group.addTask {
                        let began = ContinuousClock.now
                        let state = try await screen.authCodeState(created, wait: 20)
                        #expect(state.status == "PENDING")
                        let d = ContinuousClock.now - began
                        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
                    }
                }
                return try await group.reduce(into: [Double]()) { $0.append($1) }
            }
            // Margins for a loaded machine: a full wait is never shorter than 20 s; an answer at once well under.
            #expect(took.filter { $0 >= 19.9 }.count == LongPoll<AuthCodeState>.maxWaitersPerKey, "\(took.sorted())")
            #expect(took.filter { $0 < 12 }.count == 3, "\(took.sorted())")
        }
    }

    static func rawState(_ server: URL, _ created: AuthCodeCreated, wait: String) async throws -> (Int, String) {
        var r = URLRequest(
            url: server.appendingPathComponent("v1/auth-codes/current").appending(queryItems: [
                URLQueryItem(name: "wait", value: wait)
            ])
        )
        r.setValue("Bearer \(created.binding)", forHTTPHeaderField: "Authorization")
        let (data, response) = try await URLSession.shared.data(for: r)
        return ((response as! HTTPURLResponse).statusCode, String(decoding: data, as: UTF8.self))
    }

    /// Locked after the approval (five wrong passwords in a row; no delay between them here): collecting
    /// the approved code gives no session.
    @Test(arguments: Backend.available)
    func aLockedAccountGetsNoSessionFromAnApprovedCode(_ backend: Backend) async throws {
        try await withLiveServer(
            backend,
            configure: { $0.lockout = LockoutPolicy(delayAfter: 3, delay: 0, lockAfter: 5) }
        ) {
            server,
            h in
            let (screen, created, _) = try await Self.approved("hanna", server: server)
            for _ in 0..<5 {
                await #expect(throws: ClientError.self) {
                    _ = try await CountersignClient(server: server).signIn(username: "hanna", password: "wrong horse")
                }
            }
            #expect(try #require(try await h.store.loginGuard(username: "hanna")).locked)
            let account = try #require(try await h.store.account(username: "hanna"))
            let refused = await #expect(throws: ClientError.self) {
                _ = try await screen.completeAuthCodeSignIn(created)
            }
            #expect(refused?.code == .accountLocked, "\(String(describing: refused))")
            #expect(screen.token == nil)
            let sessions = try await h.store.sql.raw(
                "SELECT COUNT(*) AS n FROM sessions WHERE account_id = \(bind: account.id)"
            ).first()
            #expect(
                try sessions?.decode(column: "n", as: Int.self) == 0,
                "the lock ended the others, and none was made"
            )
        }
    }

    /// A QR sign-in checks no password, so it resets no count: wrong passwords before it still count after.
    @Test(arguments: Backend.available)
    func aQRSignInKeepsTheLockoutCount(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let (screen, created, _) = try await Self.approved("quinn", server: server)
            await #expect(throws: ClientError.self) {
                _ = try await CountersignClient(server: server).signIn(username: "quinn", password: "wrong horse")
            }
            #expect(try await h.store.loginGuard(username: "quinn")?.failures == 1)
            _ = try await screen.completeAuthCodeSignIn(created)
            #expect(screen.token != nil)
            #expect(try await h.store.loginGuard(username: "quinn")?.failures == 1, "no password, no reset")
        }
    }

    /// A QR session is signed in, but without a password: every change to the second factors asks for a
    /// full re-authentication first, as does registering a messaging device.
    @Test(arguments: Backend.available)
    func aQRSessionCannotChangeSecondFactors(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, _ in
            let (screen, created, _) = try await Self.approved("ilse", server: server)
            _ = try await screen.completeAuthCodeSignIn(created)
            #expect(try await screen.me().username == "ilse")
            let token = try #require(screen.token)
            for (method, path) in [
                ("POST", "v1/me/mfa/totp"), ("POST", "v1/me/mfa/pairing-keys"), ("POST", "v1/me/mfa/recovery-codes"),
                ("DELETE", "v1/me/mfa"),
            ] {
                let (status, body) = try await SessionEndingTests.call(
                    method,
                    server.appendingPathComponent(path),
                    token: token,
                    json: method == "POST" ? [:] : nil
                )
                #expect(
                    status == 401 && body["code"] as? String == "reauthentication-required",
                    "\(method) \(path): \(status) \(body)"
                )
            }
            let identity = Identity.generate()
            let device = await #expect(throws: ClientError.self) {
                _ = try await screen.registerDevice(name: "qr", signing: identity, encryptionKey: identity.publicKey)
            }
            #expect(device?.code == .reauthenticationRequired, "\(String(describing: device))")
        }
    }
}

extension Person {
    /// An authenticator ("phone", new keys) paired to this person's account through the SDK.
    func pairAuthenticator(server: URL) async throws -> CountersignAuthenticator {
        let (_, key) = try await SessionEndingTests.call(
            "POST",
            server.appendingPathComponent("v1/me/mfa/pairing-keys"),
            token: try #require(sdk.token),
            json: [:]
        )
        return try await CountersignAuthenticator.pair(
            try #require(key["key"] as? String),
            server: server,
            name: "phone",
            identity: Identity.generate()
        ).0
    }
}
