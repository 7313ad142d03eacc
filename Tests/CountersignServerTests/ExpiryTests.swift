import CountersignAPI
import CountersignClient
import CountersignCrypto
import Foundation
import Logging
import SQLKit
import Testing

@testable import CountersignServer

/// What expires, and when (issue 19, 8 and 15): completed sign-ins are collected soon or never, the
/// purge deletes every kind of expired row (and nothing live), and a delayed message is kept for the
/// retention period after it is due.
@Suite(.closesStorage) struct ExpiryTests {
    /// A completed sign-in gives its session within two minutes of its start, and never once the
    /// password it began with has changed.
    @Test(arguments: Backend.available)
    func aCompletedSignInIsCollectedSoonAndOnlyWithTheSamePassword(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            let (session, secret) = try await SecondFactorGuessingTests.accountWithTOTP(api, h, "ilse")
            func completed() async throws -> (id: String, binding: String) {
                h.clock.advance(30)  // a fresh TOTP step each time
                let tx = try await SecondFactorGuessingTests.pending(api, "ilse")
                let right = try await SecondFactorGuessingTests.otp(api, tx, try MFAReauthTests.code(secret, h))
                #expect(right.json["status"] as? String == "COMPLETED", "\(right.json)")
                return tx
            }
            func collect(_ tx: (id: String, binding: String)) async throws -> API.Reply {
                try await api.call(.post, "/v1/mfa/transactions/\(tx.id)/session", token: tx.binding)
            }
            // Kept for later: refused.
            let late = try await completed()
            h.clock.advance(121)
            let tooLate = try await collect(late)
            #expect(
                tooLate.status == 409 && tooLate.code == "mfa-sign-in-superseded",
                "\(tooLate.status) \(tooLate.json)"
            )

            // The owner changes the password between the guesser's factor and its collect.
            let stolen = try await completed()
            let change = try await api.call(
                .put,
                "/v1/me/password",
                json: ["currentPassword": "correct horse", "newPassword": "battery staple 2"],
                token: session
            )
            #expect(change.status == 204, "\(change.status) \(change.json)")
            let superseded = try await collect(stolen)
            #expect(
                superseded.status == 409 && superseded.code == "mfa-sign-in-superseded",
                "\(superseded.status) \(superseded.json)"
            )

            // In time and with the same password: a session.
            h.clock.advance(30)
            let r = try await api.signIn("ilse", "battery staple 2")
            let tx = try #require(r.json["transaction"] as? [String: Any])
            let fresh = (id: try #require(tx["id"] as? String), binding: try #require(r.json["binding"] as? String))
            #expect(
                try await SecondFactorGuessingTests.otp(api, fresh, try MFAReauthTests.code(secret, h)).json["status"]
                    as? String == "COMPLETED"
            )
            let ok = try await collect(fresh)
            #expect(ok.status == 201 && ok.json["token"] is String, "\(ok.status) \(ok.json)")
        }
    }

    /// An approved QR sign-in code gives its session soon or never (it could be collected for a day).
    @Test(arguments: Backend.available)
    func anApprovedQRCodeIsCollectedSoonOrNever(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let gina = try await Person.make("gina", server: server)
            let phone = try await gina.pairAuthenticator(server: server)
            func approved() async throws -> (CountersignClient, AuthCodeCreated) {
                let screen = CountersignClient(server: server)
                let created = try await screen.createAuthCode()
                let claim = try await phone.authenticate(authCode: created.code)
                #expect(try await claim.approve(userId: claim.users[0].userId) == "COMPLETED")
                return (screen, created)
            }
            let (late, kept) = try await approved()
            h.clock.advance(121)
            let refused = await #expect(throws: ClientError.self) { _ = try await late.completeAuthCodeSignIn(kept) }
            #expect(refused?.code == .mfaSignInSuperseded, "\(String(describing: refused))")
            let (prompt, created) = try await approved()
            _ = try await prompt.completeAuthCodeSignIn(created)
            #expect(try await prompt.me().username == "gina")
        }
    }

    static func count(_ sql: any SQLDatabase, _ table: String) async throws -> Int {
        try await sql.raw("SELECT COUNT(*) AS n FROM \(unsafeRaw: table)").first()!.decode(column: "n", as: Int.self)
    }

    /// The purge service, on the injected clock, deletes what expired (MFA transactions and auth codes a
    /// day after expiry, challenges, pairing keys, push tickets, logs after 30 days) and keeps the rest.
    @Test(arguments: Backend.available)
    func thePurgeDeletesExpiredRowsOfEveryKindAndKeepsLiveOnes(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let sql = h.storage.database as! any SQLDatabase
        let now = h.clock.now()
        func ms(_ offset: TimeInterval) -> Int64 { now.addingTimeInterval(offset).ms }
        // For each table: one row long expired, one that must stay.
        for (suffix, expiry) in [("old", ms(-2 * 86_400)), ("live", ms(60))] {
            try await sql.raw(
                "INSERT INTO pairing_keys (key_hash, account_id, expires_at) VALUES (\(bind: "k-" + suffix), 'a', \(bind: expiry))"
            ).run()
            try await sql.raw(
                """
                INSERT INTO mfa_challenges (device_id, transaction_id, jwt, expires_at) VALUES ('d', \(bind: "t-" + suffix), 'j', \(bind: expiry))
                """
            ).run()
            try await sql.raw(
                """
                INSERT INTO mfa_transactions (id, account_id, binding_hash, state, version, expires_at)
                VALUES (\(bind: "t-" + suffix), 'a', \(bind: "b-" + suffix), '{}', 1, \(bind: expiry))
                """
            ).run()
            try await sql.raw(
                """
                INSERT INTO auth_codes (code_hash, binding_hash, state, version, expires_at) VALUES (\(bind: "c-" + suffix), 'b', '{}', 1, \(bind: expiry))
                """
            ).run()
            try await sql.raw(
                """
                INSERT INTO push_tickets (ticket_hash, device_id, session_hash, expires_at) VALUES (\(bind: "p-" + suffix), 'd', 's', \(bind: expiry))
                """
            ).run()
        }
        // A transaction that expired an hour ago is kept for a day (a late status poll learns how it ended).
        try await sql.raw(
            """
            INSERT INTO mfa_transactions (id, account_id, binding_hash, state, version, expires_at) VALUES ('t-recent', 'a', 'b', '{}', 1, \(bind: ms(-3600)))
            """
        ).run()
        try await sql.raw(
            """
            INSERT INTO authenticator_logs (support_id, device_id, account_id, created_at, text) VALUES ('l-old', 'd', 'a', \(bind: ms(-31 * 86_400)), 'x')
            """
        ).run()
        try await sql.raw(
            """
            INSERT INTO authenticator_logs (support_id, device_id, account_id, created_at, text) VALUES ('l-live', 'd', 'a', \(bind: ms(-86_400)), 'x')
            """
        ).run()
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        try await PurgeService(storage: h.storage, clock: h.clock, config: h.config, logger: logger).purge()
        for (table, expected) in [
            ("pairing_keys", 1), ("mfa_challenges", 1), ("mfa_transactions", 2), ("auth_codes", 1), ("push_tickets", 1),
            ("authenticator_logs", 1),
        ] {
            #expect(try await Self.count(sql, table) == expected, "\(table)")
        }
        let left = try await sql.raw("SELECT id FROM mfa_transactions ORDER BY id").all().map {
            try $0.decode(column: "id", as: String.self)
        }
        #expect(left == ["t-live", "t-recent"])
        await h.close()
    }

    /// A message delayed by the longest delay is kept for the whole retention period after it is due, not
    /// deleted the moment it becomes due (issue 19, 15).
    @Test(arguments: Backend.available)
    func retentionCountsFromDelivery(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            let delay = MessageService.maxDeliverAfter
            let sent = try await alice.send("see you in a month", to: ["bob"], after: delay)
            let stored = try #require(try await h.storage.message(id: sent.id))
            #expect(stored.expiresAt == stored.deliverAt.addingTimeInterval(h.config.messageRetention))
            // A day after it is due, the purge keeps it, and bob reads it.
            h.clock.advance(TimeInterval(delay) + 86_400)
            var logger = Logger(label: "test")
            logger.logLevel = .warning
            try await PurgeService(storage: h.storage, clock: h.clock, config: h.config, logger: logger).purge()
            #expect(try await h.storage.message(id: sent.id) != nil)
            let queued = try await h.storage.fetch(
                deviceID: bob.device.id,
                after: 0,
                excluding: [],
                limit: 10,
                maxBytes: 1 << 20,
                now: h.clock.now(),
                recordFetch: false
            )
            #expect(queued.entries.map(\.message.id) == [sent.id], "bob's copy is still queued")
        }
    }
}
