import Foundation
import SQLKit
import Synchronization
import Testing

@testable import CountersignServer

/// Re-authentication and password changes under the lockout rule, and what the audit log says of them.
@Suite(.closesStorage) struct ReauthLockoutTests {
    static func outcomes(_ h: Harness, _ username: String) async throws -> [String] {
        let account = try #require(try await h.store.account(username: username))
        return try await h.store.auditEvents(accountID: account.id, before: nil, limit: 100).reversed().map {
            "\($0.kind) \($0.outcome)"
        }
    }

    @Test(arguments: Backend.available)
    func failedReauthAndPasswordChangesCountAndALockEndsEverySession(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("guessed")
            let stolen = try await api.token("guessed")
            let other = try await api.token("guessed")
            // Two wrong re-authentications and one wrong current password: the third failure delays.
            for _ in 0..<2 {
                #expect(
                    try await api.call(
                        .post,
                        "/v1/sessions/current/reauth",
                        json: ["password": "guess guess"],
                        token: stolen
                    ).code == "wrong-password"
                )
            }
            let third = try await api.call(
                .put,
                "/v1/me/password",
                json: ["currentPassword": "guess guess", "newPassword": "mine now, mine"],
                token: stolen
            )
            #expect(third.code == "wrong-password")
            // Delayed now: refused without a check, even with the right password, on every path.
            let refusedReauth = try await api.call(
                .post,
                "/v1/sessions/current/reauth",
                json: ["password": "correct horse"],
                token: stolen
            )
            #expect(refusedReauth.status == 429 && refusedReauth.code == "sign-in-delayed")
            let refusedChange = try await api.call(
                .put,
                "/v1/me/password",
                json: ["currentPassword": "correct horse", "newPassword": "mine now, mine"],
                token: stolen
            )
            #expect(refusedChange.status == 429 && refusedChange.code == "sign-in-delayed")
            #expect(try await api.signIn("guessed").code == "sign-in-delayed", "sign-in shares the count")
            // Past the delay (the sessions kept alive: they end after 30 idle minutes).
            func wait31Minutes() async throws {
                for _ in 0..<2 {
                    h.clock.advance(15 * 60 + 30)
                    #expect(try await api.call(.get, "/v1/me", token: stolen).status == 200)
                    #expect(try await api.call(.get, "/v1/me", token: other).status == 200)
                }
            }
            try await wait31Minutes()
            #expect(
                try await api.call(
                    .post,
                    "/v1/sessions/current/reauth",
                    json: ["password": "guess 4 guess"],
                    token: stolen
                ).code == "wrong-password"
            )
            try await wait31Minutes()
            // The fifth failure, through re-authentication, locks: every session of the account ends.
            let fifth = try await api.call(
                .post,
                "/v1/sessions/current/reauth",
                json: ["password": "guess 5 guess"],
                token: stolen
            )
            #expect(fifth.code == "wrong-password")
            #expect(try await api.call(.get, "/v1/me", token: stolen).status == 401, "the guesser's token is gone")
            #expect(try await api.call(.get, "/v1/me", token: other).status == 401, "and every other session")
            #expect(try await api.signIn("guessed").code == "account-locked")
            let log = try await Self.outcomes(h, "guessed")
            #expect(
                log == [
                    "account-created success", "sign-in success", "sign-in success",
                    "reauth wrong-password", "reauth wrong-password", "password-change wrong-password-delayed",
                    "reauth refused-delayed", "password-change refused-delayed", "sign-in refused-delayed",
                    "reauth wrong-password-delayed", "reauth wrong-password-locked", "sign-in refused-locked",
                ],
                "\(log)"
            )
        }
    }

    /// A password change that lands while a sign-in's check is running: no session is made with the old
    /// password.
    @Test(arguments: Backend.available)
    func aSignInWhosePasswordChangedMidCheckGetsNoSession(_ backend: Backend) async throws {
        let changeNow = Mutex(false)
        let storeBox = Mutex<(any ServerStorage)?>(nil)
        let h = try await Harness.make(
            backend,
            wrapStore: { base in
                storeBox.withLock { $0 = base }
                return HookedStore(base: base) { username in
                    guard
                        changeNow.withLock({
                            let v = $0
                            $0 = false
                            return v
                        }), let base = storeBox.withLock({ $0 }),
                        let account = try await base.account(username: username)
                    else { return }
                    let other = try Harness.testHasher.hash(Array("changed meanwhile".utf8))
                    try await base.setPasswordHash(other, accountID: account.id)
                }
            }
        )
        try await h.run { api in
            try await api.register("raced")
            #expect(try await api.signIn("raced").status == 201, "no change, a session")
            changeNow.withLock { $0 = true }
            let raced = try await api.signIn("raced")
            #expect(
                raced.status == 401 && raced.code == "invalid-credentials" && raced.json["token"] == nil,
                "\(raced.status)"
            )
            let account = try #require(try await h.store.account(username: "raced"))
            let rows = try await h.store.sql.raw(
                "SELECT COUNT(*) AS n FROM sessions WHERE account_id = \(bind: account.id)"
            ).first()
            #expect(try rows?.decode(column: "n", as: Int.self) == 1, "only the first session is stored")
            #expect(try await api.signIn("raced", "changed meanwhile").status == 201)
        }
    }
}
