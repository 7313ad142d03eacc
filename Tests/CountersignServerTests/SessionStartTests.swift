import CountersignAPI
import Foundation
import SQLKit
import Synchronization
import Testing

@testable import CountersignServer

/// `SignInStore.startSession` on both backends: a sign-in's last write is one transaction that resets
/// the lockout count and stores the session with its audit row, only while the lockout state allows it
/// and the password is still the one checked; a password change racing it never leaves a session made
/// with the old password.
@Suite(.closesStorage) struct SessionStartTests {
    static func account(_ h: Harness, _ name: String) async throws -> AccountRecord {
        _ = try await h.service.register(
            username: name,
            password: "correct horse",
            name: "N",
            lastname: "L",
            captcha: nil,
            origin: RequestOrigin(address: "127.0.0.1", userAgent: "")
        )
        return try #require(try await h.storage.account(username: name))
    }

    static func session(_ account: AccountRecord, _ token: String, at now: Date) -> SessionRecord {
        SessionRecord(
            tokenHash: TokenHash.hex(token),
            accountID: account.id,
            createdAt: now,
            lastUsedAt: now,
            authenticatedAt: now,
            expiresAt: now.addingTimeInterval(3600),
            address: "192.0.2.1",
            userAgent: "test"
        )
    }

    static func entry(_ account: AccountRecord, at now: Date) -> AuditEntry {
        AuditEntry(
            accountID: account.id,
            kind: "sign-in",
            outcome: "success",
            address: "192.0.2.1",
            userAgent: "test",
            at: now
        )
    }

    /// `startSession` for `account` with the token `token`, at `at`, checked against `hash` (the
    /// account's own unless given), with the policy of `h`.
    static func start(
        _ h: Harness,
        _ account: AccountRecord,
        _ token: String,
        at: Date,
        hash: String? = nil,
        resetsCount: Bool = true,
        passkeyID: String? = nil
    ) async throws -> SessionStart {
        var record = session(account, token, at: at)
        record.passkeyID = passkeyID
        return try await h.storage.startSession(
            record,
            username: account.username,
            passwordHash: hash ?? account.passwordHash,
            policy: h.config.lockout,
            now: at,
            audit: entry(account, at: at),
            resetsCount: resetsCount,
            claim: nil
        )
    }

    static func count(_ h: Harness, _ table: String, _ accountID: String) async throws -> Int {
        try await h.storage.sql.raw(
            "SELECT COUNT(*) AS n FROM \(unsafeRaw: table) WHERE account_id = \(bind: accountID)"
        ).first()?.decode(column: "n", as: Int.self) ?? -1
    }

    @Test(arguments: Backend.available)
    func aStartStoresTheSessionAndItsAuditRowAndResetsTheCount(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let store = h.storage
        let policy = h.config.lockout
        let now = h.clock.now()
        let a = try await Self.account(h, "starter")
        _ = try await store.countSignInFailure(username: a.username, policy: policy, now: now)
        #expect(try await store.loginGuard(username: a.username)?.failures == 1)
        let audited = try await Self.count(h, "audit_events", a.id)

        let started = try await Self.start(h, a, "cs_one", at: now)
        #expect(started == .started)
        #expect(try await store.session(tokenHash: TokenHash.hex("cs_one"))?.accountID == a.id)
        #expect(try await Self.count(h, "audit_events", a.id) == audited + 1)
        #expect(try await store.loginGuard(username: a.username)?.failures == 0, "a complete sign-in resets the count")

        // The same session again: the insert fails, and the transaction takes its count reset with it.
        _ = try await store.countSignInFailure(username: a.username, policy: policy, now: now)
        await #expect(throws: (any Error).self) {
            try await Self.start(h, a, "cs_one", at: now)
        }
        #expect(try await Self.count(h, "audit_events", a.id) == audited + 1, "no audit row from a failed start")
        #expect(try await store.loginGuard(username: a.username)?.failures == 1, "rolled back whole")
        await store.close()
    }

    /// A sign-in that checked no password (a QR or passkey sign-in) keeps the count, and is still refused
    /// while the username is delayed.
    @Test(arguments: Backend.available)
    func aPasswordlessStartKeepsTheCount(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let store = h.storage
        let policy = h.config.lockout
        let now = h.clock.now()
        let a = try await Self.account(h, "passwordless")
        _ = try await store.countSignInFailure(username: a.username, policy: policy, now: now)
        let started = try await Self.start(h, a, "cs_qr", at: now, resetsCount: false)
        #expect(started == .started)
        #expect(try await store.session(tokenHash: TokenHash.hex("cs_qr")) != nil)
        #expect(try await store.loginGuard(username: a.username)?.failures == 1, "no password checked, no reset")
        var failure = LockoutPolicy.Failure.counted(failures: 0)
        while case .counted = failure {
            failure = try await store.countSignInFailure(username: a.username, policy: policy, now: now)
        }
        let refused = try await Self.start(h, a, "cs_qr2", at: now, resetsCount: false)
        guard case .refused(.delayed) = refused else {
            Issue.record("\(refused)")
            return
        }
        #expect(try await store.session(tokenHash: TokenHash.hex("cs_qr2")) == nil)
        // A reservation left by a check that never finished counts as a failure once it expires, here as
        // in every other step: past the delay, a stale one delays the account again.
        let failures = try #require(try await store.loginGuard(username: a.username)?.failures)
        let later = now.addingTimeInterval(policy.delay + 1)
        #expect(try await store.reserveSignIn(username: a.username, policy: policy, now: later) == .proceed)
        let expired = later.addingTimeInterval(policy.reservationTimeout + 1)
        let stale = try await Self.start(h, a, "cs_qr3", at: expired, resetsCount: false)
        guard case .refused(.delayed) = stale else {
            Issue.record("an expired reservation was not counted: \(stale)")
            return
        }
        #expect(try await store.loginGuard(username: a.username)?.failures == failures + 1)
        await store.close()
    }

    /// A passkey sign-in whose passkey was removed meanwhile gets no session (the removal ended the
    /// sessions it made, and would miss this one); with the passkey still there, it does.
    @Test(arguments: Backend.available)
    func aRemovedPasskeyStartsNoSession(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let now = h.clock.now()
        let a = try await Self.account(h, "keyed")
        let p = PasskeyStoreTests.passkey("pk1", account: a.id, credential: [1, 2, 3], at: now)
        #expect(try await h.storage.addPasskey(p, max: 10, spending: nil) == .added)
        #expect(try await Self.start(h, a, "cs_pk", at: now, passkeyID: "pk1") == .started)
        #expect(try await h.storage.removePasskey(id: "pk1", accountID: a.id, keepingSession: ""))
        #expect(try await h.storage.session(tokenHash: TokenHash.hex("cs_pk")) == nil, "swept")
        #expect(try await Self.start(h, a, "cs_pk2", at: now, passkeyID: "pk1") == .superseded)
        #expect(try await Self.count(h, "sessions", a.id) == 0)
        await h.close()
    }

    /// A password change is one transaction: the new hash, every other session and every device session
    /// ended; a compare-and-set rehash changes nothing once the hash has moved on.
    @Test(arguments: Backend.available)
    func aPasswordChangeEndsEveryOtherSessionInOneWrite(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let store = h.storage
        let now = h.clock.now()
        let a = try await Self.account(h, "changer")
        for token in ["cs_keep", "cs_other1", "cs_other2"] {
            #expect(try await Self.start(h, a, token, at: now) == .started)
        }
        try await store.sql.raw(
            """
            INSERT INTO device_sessions (token_hash, device_id, account_id, created_at, last_used_at, expires_at)
            VALUES ('dev-token', 'dev-1', \(bind: a.id), 0, 0, \(bind: now.ms + 3_600_000))
            """
        ).run()
        let newHash = try Harness.testHasher.hash(Array("a new password".utf8))
        try await store.changePassword(newHash, accountID: a.id, keepingSession: TokenHash.hex("cs_keep"))
        #expect(try await store.account(id: a.id)?.passwordHash == newHash)
        #expect(try await store.session(tokenHash: TokenHash.hex("cs_keep")) != nil, "the changer's own")
        #expect(try await Self.count(h, "sessions", a.id) == 1)
        #expect(try await Self.count(h, "device_sessions", a.id) == 0)
        #expect(!(try await store.replacePasswordHash(a.passwordHash, with: "x", accountID: a.id)), "stale compare")
        #expect(try await store.account(id: a.id)?.passwordHash == newHash)
        #expect(try await store.replacePasswordHash(newHash, with: a.passwordHash, accountID: a.id))
        #expect(try await store.account(id: a.id)?.passwordHash == a.passwordHash)
        try await store.deleteSessions(accountID: a.id, keeping: nil)
        #expect(try await Self.count(h, "sessions", a.id) == 0)
        await store.close()
    }

    @Test(arguments: Backend.available)
    func aLockedOrChangedAccountGetsNoSession(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let store = h.storage
        let policy = h.config.lockout
        let now = h.clock.now()
        let a = try await Self.account(h, "refused")
        let audited = try await Self.count(h, "audit_events", a.id)
        _ = try await store.countSignInFailure(username: a.username, policy: policy, now: now)

        // A password change landed meanwhile: no session, no audit row, and the count stays.
        let superseded = try await Self.start(h, a, "cs_old", at: now, hash: a.passwordHash + "x")
        #expect(superseded == .superseded)
        #expect(try await store.session(tokenHash: TokenHash.hex("cs_old")) == nil)
        #expect(try await store.loginGuard(username: a.username)?.failures == 1, "a superseded check resets nothing")

        // Delayed, then locked, by failures elsewhere: refused with the gate, nothing stored.
        var at = now
        var failure = LockoutPolicy.Failure.counted(failures: 0)
        while case .counted = failure {
            failure = try await store.countSignInFailure(username: a.username, policy: policy, now: at)
        }
        guard case .delayed(let until, _) = failure else {
            Issue.record("not delayed: \(failure)")
            return
        }
        let delayed = try await Self.start(h, a, "cs_delayed", at: at)
        #expect(delayed == .refused(.delayed(until: until)))
        let delayedFailures = try await store.loginGuard(username: a.username)?.failures
        #expect(delayedFailures == policy.delayAfter, "a refused start resets nothing")
        for _ in 0..<policy.lockAfter where failure != .locked {
            at = at.addingTimeInterval(policy.delay + 1)
            failure = try await store.countSignInFailure(username: a.username, policy: policy, now: at)
        }
        #expect(failure == .locked)
        let locked = try await Self.start(h, a, "cs_locked", at: at)
        #expect(locked == .refused(.locked))
        #expect(try await store.session(tokenHash: TokenHash.hex("cs_locked")) == nil)
        #expect(try await store.loginGuard(username: a.username)?.locked == true)
        #expect(try await Self.count(h, "sessions", a.id) == 0)
        #expect(try await Self.count(h, "audit_events", a.id) == audited)
        await store.close()
    }

    /// Sessions started while the password changes (its new hash, then the end of every session, as
    /// `changePassword` does): once the change has finished, none made with the old password is left.
    @Test(arguments: Backend.available)
    func aPasswordChangeRacingStartsLeavesNoOldSession(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let store = h.storage
        let now = h.clock.now()
        let a = try await Self.account(h, "racer")
        let audited = try await Self.count(h, "audit_events", a.id)
        let newHash = try Harness.testHasher.hash(Array("changed meanwhile".utf8))
        var seen: [SessionStart] = []
        for round in 0..<16 {
            try await store.setPasswordHash(a.passwordHash, accountID: a.id)
            let outcomes = try await withThrowingTaskGroup(of: SessionStart?.self) { group in
                for i in 0..<6 {
                    group.addTask {
                        try await Self.start(h, a, "cs_\(round)_\(i)", at: now)
                    }
                }
                group.addTask {
                    // Landing anywhere among the starts (which order each took is the scheduler's
                    // choice; a change in flight is made certain below).
                    try await Task.sleep(for: .microseconds(Int.random(in: 0...3000)))
                    try await store.setPasswordHash(newHash, accountID: a.id)
                    try await store.deleteSessions(accountID: a.id, keeping: nil)
                    return nil
                }
                return try await group.reduce(into: [SessionStart]()) { if let r = $1 { $0.append(r) } }
            }
            #expect(outcomes.count == 6 && outcomes.allSatisfy { $0 == .started || $0 == .superseded })
            #expect(try await Self.count(h, "sessions", a.id) == 0, "round \(round): \(outcomes)")
            seen += outcomes
        }
        let started = seen.filter { $0 == .started }.count
        #expect(try await Self.count(h, "audit_events", a.id) == audited + started, "one audit row per session started")
        await store.close()
    }

    /// A password change still uncommitted when a start reads the hash: the start waits for it (the
    /// write lock on SQLite, FOR SHARE on PostgreSQL) and sees the new hash, instead of storing a
    /// session the change's sweep would not see.
    @Test(arguments: Backend.available)
    func aStartWaitsForAPasswordChangeInFlight(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let store = h.storage
        let now = h.clock.now()
        let a = try await Self.account(h, "inflight")
        let newHash = try Harness.testHasher.hash(Array("changed meanwhile".utf8))
        let (updated, signal) = AsyncStream.makeStream(of: Void.self)
        let change = Task {
            try await store.writeTransaction { sql in
                try await sql.raw("UPDATE accounts SET password_hash = \(bind: newHash) WHERE id = \(bind: a.id)").run()
                signal.yield()
                // Long enough for the start below to reach its read while this is uncommitted.
                try await Task.sleep(for: .milliseconds(400))
            }
        }
        for await _ in updated { break }
        let started = try await Self.start(h, a, "cs_inflight", at: now)
        try await change.value
        #expect(started == .superseded)
        #expect(try await Self.count(h, "sessions", a.id) == 0)
        await store.close()
    }

    /// A lock counted from expired reservations (a check that never finished: a crashed node, a stalled
    /// request) ends the account's sessions and device sessions like a lock from a wrong password, in the
    /// transaction that stores it, whichever step counts it; the service closes the push connections.
    @Test(arguments: Backend.available)
    func aLockFromAnExpiredReservationEndsTheSessions(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let store = h.storage
        let policy = h.config.lockout
        let a = try await Self.account(h, "stalled")
        let bystander = try await Self.account(h, "bystander")
        let ended = EndingLog()
        h.endings.observe { ended.append($0) }
        #expect(try await Self.start(h, a, "cs_stolen", at: h.clock.now()) == .started)
        #expect(try await Self.start(h, bystander, "cs_bystander", at: h.clock.now()) == .started)
        for account in [a, bystander] { try await Self.holdings(h, account) }
        try await Self.stallOneShortOfTheLock(h, a)
        #expect(try await Self.count(h, "sessions", a.id) == 1)
        h.clock.advance(policy.reservationTimeout + 1)

        // The next sign-in, with the right password, counts the stale reservation first and is refused.
        await #expect(throws: SignInRefusal.locked) {
            _ = try await h.signIn.verifySignIn(
                username: a.username,
                password: "correct horse",
                captcha: nil,
                origin: RequestOrigin(address: "192.0.2.9", userAgent: "")
            )
        }
        #expect(try await store.loginGuard(username: a.username)?.locked == true)
        for table in ["sessions", "device_sessions", "pairing_keys"] {
            #expect(try await Self.count(h, table, a.id) == 0, "\(table)")
            #expect(try await Self.count(h, table, bystander.id) == 1, "another account's \(table) stay")
        }
        #expect(ended.all == [.account(a.id)], "\(ended.all)")
        await store.close()
    }

    /// A check that outlives its reservation and is then given back (the database refused its outcome,
    /// or a code's check failed to run) counts that reservation first; one short of the lock, that locks.
    /// The store ends the sessions in that transaction; the attempt is answered as the lock refuses any
    /// (423, a password sign-in's audited `refused-locked`), and the push connections close.
    @Test(arguments: Backend.available)
    func aLockCountedWhenACheckIsGivenBackClosesThePush(_ backend: Backend) async throws {
        let outlive = Mutex<(@Sendable () throws -> Void)?>(nil)
        let h = try await Harness.make(
            backend,
            wrapStore: { base in HookedStore(base: base, beforeFinish: { _ in try outlive.withLock { $0 }?() }) }
        )
        let policy = h.config.lockout
        let clock = h.clock
        let ended = EndingLog()
        h.endings.observe { ended.append($0) }
        struct Refused: Error {}
        outlive.withLock {
            $0 = {
                clock.advance(policy.reservationTimeout + 1)
                throw Refused()
            }
        }
        let byPassword = try await Self.account(h, "givenback")
        let byCode = try await Self.account(h, "codegivenback")
        for a in [byPassword, byCode] {
            #expect(try await Self.start(h, a, "cs_" + a.username, at: h.clock.now()) == .started)
            try await Self.oneShortOfTheLock(h, a)
        }

        await #expect(throws: SignInRefusal.locked) {
            _ = try await h.signIn.verifySignIn(
                username: byPassword.username,
                password: "correct horse",
                captcha: nil,
                origin: RequestOrigin(address: "192.0.2.9", userAgent: "")
            )
        }
        await #expect(throws: SignInRefusal.locked) {
            _ = try await h.signIn.checkSecondFactor(accountID: byCode.id) {
                clock.advance(policy.reservationTimeout + 1)
                throw CancellationError()
            }
        }
        for a in [byPassword, byCode] {
            #expect(try await h.storage.loginGuard(username: a.username)?.locked == true, "\(a.username)")
            #expect(try await Self.count(h, "sessions", a.id) == 0, "\(a.username)")
        }
        #expect(ended.all == [.account(byPassword.id), .account(byCode.id)], "\(ended.all)")
        #expect(
            try await Self.audited(h, byPassword, "sign-in") == ["success", "refused-locked"],
            "its first session, then this"
        )
        await h.close()
    }

    /// Leaves `account` one failure short of the lock, the delay over.
    static func oneShortOfTheLock(_ h: Harness, _ account: AccountRecord) async throws {
        let policy = h.config.lockout
        while try await h.storage.loginGuard(username: account.username)?.failures ?? 0 < policy.lockAfter - 1 {
            _ = try await h.storage.countSignInFailure(username: account.username, policy: policy, now: h.clock.now())
            h.clock.advance(policy.delay + 1)
        }
    }

    /// Leaves `account` one failure short of the lock, the delay over, with a check that never finishes
    /// (its reservation expires after `reservationTimeout`).
    static func stallOneShortOfTheLock(_ h: Harness, _ account: AccountRecord) async throws {
        let policy = h.config.lockout
        try await oneShortOfTheLock(h, account)
        let reserved = try await h.storage.reserveSignIn(username: account.username, policy: policy, now: h.clock.now())
        #expect(reserved == .proceed)
    }

    /// A device session and a pairing key of `account`, beside its account sessions.
    static func holdings(_ h: Harness, _ account: AccountRecord) async throws {
        let now = h.clock.now().ms
        try await h.storage.sql.raw(
            """
            INSERT INTO device_sessions (token_hash, device_id, account_id, created_at, last_used_at, expires_at)
            VALUES (\(bind: "ds-" + account.id), 'device', \(bind: account.id), \(bind: now), \(bind: now), \(bind: now + 3_600_000))
            """
        ).run()
        try await h.storage.sql.raw(
            """
            INSERT INTO pairing_keys (key_hash, account_id, expires_at)
            VALUES (\(bind: "pk-" + account.id), \(bind: account.id), \(bind: now + 600_000))
            """
        ).run()
    }

    /// Accounts locked before this release (by an expired reservation, which ended nothing) lose their
    /// sessions, device sessions and pairing keys when the server upgrades; unlocked ones keep theirs.
    @Test(arguments: Backend.available)
    func theUpgradeEndsTheSessionsOfLockedAccounts(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let locked = try await Self.account(h, "lockedbefore")
        let open = try await Self.account(h, "openbefore")
        for account in [locked, open] {
            #expect(try await Self.start(h, account, "cs_" + account.username, at: h.clock.now()) == .started)
            try await Self.holdings(h, account)
        }
        try await h.storage.sql.raw(
            """
            INSERT INTO login_guards (username, failures, pending, locked) VALUES ('lockedbefore', 5, 0, 1)
            ON CONFLICT (username) DO UPDATE SET failures = 5, locked = 1
            """
        ).run()
        #expect(Migrations.all.contains { $0 is EndLockedAccountsSessions }, "the server runs it")
        try await EndLockedAccountsSessions().prepare(on: h.storage.database)
        for table in ["sessions", "device_sessions", "pairing_keys"] {
            #expect(try await Self.count(h, table, locked.id) == 0, "\(table)")
            #expect(try await Self.count(h, table, open.id) == 1, "\(table)")
        }
        await h.close()
    }

    /// The same lock reached from a step with no reservation of its own (a QR sign-in's gate) ends them
    /// too: the transaction that locks ends them, not the caller.
    @Test(arguments: Backend.available)
    func aLockCountedByAGateEndsTheSessions(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let store = h.storage
        let policy = h.config.lockout
        let a = try await Self.account(h, "gated")
        #expect(try await Self.start(h, a, "cs_held", at: h.clock.now()) == .started)
        try await Self.stallOneShortOfTheLock(h, a)
        h.clock.advance(policy.reservationTimeout + 1)
        let gated = try await Self.start(h, a, "cs_qr_late", at: h.clock.now(), resetsCount: false)
        #expect(gated == .refused(.locked))
        #expect(try await Self.count(h, "sessions", a.id) == 0, "the held session ended, no new one")
        await store.close()
    }

    /// A lock that lands between a correct password's check and its session (failures elsewhere) refuses
    /// the sign-in (account-locked), tells the push channel, and is audited like any refused attempt.
    @Test(arguments: Backend.available)
    func aStartRefusedByALockIsAudited(_ backend: Backend) async throws {
        let lockNow = Mutex<(@Sendable (String) async throws -> Void)?>(nil)
        let h = try await Harness.make(
            backend,
            wrapStore: { base in
                HookedStore(base: base, beforeStart: { try await lockNow.withLock { $0 }?($0) }, beforeFinish: { _ in })
            }
        )
        let a = try await Self.account(h, "latelock")
        let ended = EndingLog()
        h.endings.observe { ended.append($0) }
        let sql = h.storage.sql
        lockNow.withLock {
            $0 = { username in
                try await sql.raw("UPDATE login_guards SET locked = 1 WHERE username = \(bind: username)").run()
            }
        }
        let origin = RequestOrigin(address: "192.0.2.7", userAgent: "")
        let verified = try await h.signIn.verifySignIn(
            username: a.username,
            password: "correct horse",
            captcha: nil,
            origin: origin
        )
        await #expect(throws: SignInRefusal.locked) { _ = try await h.signIn.completeSignIn(verified) }
        #expect(try await Self.count(h, "sessions", a.id) == 0)
        let outcomes = try await sql.raw(
            "SELECT outcome FROM audit_events WHERE account_id = \(bind: a.id) AND kind = 'sign-in'"
        ).all().map { try $0.decode(column: "outcome", as: String.self) }
        #expect(outcomes == ["refused-locked"], "\(outcomes)")
        #expect(ended.all == [.account(a.id)], "\(ended.all)")
        await h.close()
    }

    /// The `kind` outcomes audited for `account`, oldest first.
    static func audited(_ h: Harness, _ account: AccountRecord, _ kind: String) async throws -> [String] {
        try await h.storage.sql.raw(
            """
            SELECT outcome FROM audit_events WHERE account_id = \(bind: account.id) AND kind = \(bind: kind)
            ORDER BY at, id
            """
        ).all().map { try $0.decode(column: "outcome", as: String.self) }
    }

    /// A sign-in overtaken by a password change (during its check, or between its password and its second
    /// factor) gets no session and is audited as such; so is a re-authentication overtaken by a change, or
    /// refused by a lock that landed before it completed. Nothing is marked or started.
    @Test(arguments: Backend.available)
    func overtakenAndRefusedCompletionsAreAudited(_ backend: Backend) async throws {
        let changeNow = Mutex<(@Sendable (String) async throws -> Void)?>(nil)
        let h = try await Harness.make(
            backend,
            wrapStore: { base in
                HookedStore(
                    base: base,
                    beforeStart: { try await changeNow.withLock { $0 }?($0) },
                    beforeFinish: { _ in }
                )
            }
        )
        let sql = h.storage.sql
        let origin = RequestOrigin(address: "192.0.2.8", userAgent: "")
        let a = try await Self.account(h, "overtaken")
        changeNow.withLock {
            $0 = { username in
                try await sql.raw("UPDATE accounts SET password_hash = 'changed' WHERE username = \(bind: username)")
                    .run()
            }
        }
        let verified = try await h.signIn.verifySignIn(
            username: a.username,
            password: "correct horse",
            captcha: nil,
            origin: origin
        )
        await #expect(throws: SignInError.invalidCredentials(delayedUntil: nil, locked: false)) {
            _ = try await h.signIn.completeSignIn(verified)
        }
        changeNow.withLock { $0 = nil }
        #expect(try await Self.count(h, "sessions", a.id) == 0)
        #expect(try await Self.audited(h, a, "sign-in") == ["refused-superseded"])

        // A second factor that finishes after the change: the sign-in began with another password.
        let b = try await Self.account(h, "overtakenlater")
        let tag = SignInService.passwordTag(b.passwordHash)
        try await sql.raw("UPDATE accounts SET password_hash = 'changed' WHERE id = \(bind: b.id)").run()
        await #expect(throws: SignInError.superseded) {
            _ = try await h.signIn.finishSecondFactor(accountID: b.id, method: .push, passwordTag: tag, origin: origin)
        }
        #expect(try await Self.count(h, "sessions", b.id) == 0)
        #expect(try await Self.audited(h, b, "sign-in") == ["refused-superseded"])

        // Re-authentications of a live session: overtaken by a change, then refused by a lock.
        let c = try await Self.account(h, "reauthrefused")
        #expect(try await Self.start(h, c, "cs_reauth", at: h.clock.now()) == .started)
        let tokenHash = TokenHash.hex("cs_reauth")
        try await sql.raw("UPDATE sessions SET authenticated_at = 0 WHERE token_hash = \(bind: tokenHash)").run()
        let oldTag = SignInService.passwordTag(c.passwordHash)
        try await sql.raw("UPDATE accounts SET password_hash = 'changed' WHERE id = \(bind: c.id)").run()
        await #expect(throws: SignInError.superseded) {
            try await h.signIn.finishReauthentication(
                tokenHash: tokenHash,
                accountID: c.id,
                method: .push,
                passwordTag: oldTag,
                origin: origin
            )
        }
        let ended = EndingLog()
        h.endings.observe { ended.append($0) }
        try await sql.raw(
            """
            INSERT INTO login_guards (username, failures, pending, locked) VALUES (\(bind: c.username), 5, 0, 1)
            ON CONFLICT (username) DO UPDATE SET locked = 1
            """
        ).run()
        await #expect(throws: SignInRefusal.locked) {
            try await h.signIn.finishReauthentication(
                tokenHash: tokenHash,
                accountID: c.id,
                method: .push,
                origin: origin
            )
        }
        #expect(try await Self.audited(h, c, "reauth") == ["refused-superseded", "refused-locked"])
        #expect(ended.all == [.account(c.id)], "\(ended.all)")
        let marked = try await sql.raw("SELECT authenticated_at FROM sessions WHERE token_hash = \(bind: tokenHash)")
            .first()?.decode(column: "authenticated_at", as: Int64.self)
        #expect(marked == 0 || marked == nil, "not marked fresh")
        await h.close()
    }
}
