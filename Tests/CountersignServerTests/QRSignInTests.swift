import CountersignAPI
import CountersignClient
import CountersignCrypto
import Foundation
import SQLKit
import Testing

@testable import CountersignServer

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
