import CountersignAPI
import Foundation
import Testing

@testable import CountersignServer

/// The passkey store on both backends: a ceremony is answered at most once, a credential belongs to one
/// account, ten is the most an account has however many registrations race, and a use is recorded only
/// over the count it was checked against.
@Suite(.closesStorage) struct PasskeyStoreTests {
    static func account(_ h: Harness, _ name: String) async throws -> String {
        try await h.service.register(
            username: name,
            password: "correct horse",
            name: "N",
            lastname: "L",
            captcha: nil,
            origin: RequestOrigin(address: "127.0.0.1", userAgent: "")
        )
        return try #require(try await h.storage.account(username: name)).id
    }

    static func passkey(_ id: String, account: String, credential: [UInt8], at: Date) -> StoredPasskey {
        StoredPasskey(
            id: id,
            accountID: account,
            credentialID: credential,
            publicKey: [0xA5, 1, 2],
            signCount: 0,
            backupEligible: true,
            backedUp: false,
            aaguid: Array(repeating: 9, count: 16),
            transports: ["hybrid", "internal"],
            name: "Phone",
            createdAt: at,
            lastUsedAt: nil,
            prfSalt: Array(repeating: 7, count: 32)
        )
    }

    @Test(arguments: Backend.available)
    func ceremoniesAreTakenOnceAndExpire(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let store = h.storage
        let now = h.clock.now()
        try await store.createCeremony(id: "c1", state: Data("{\"a\":1}".utf8), expiresAt: now.addingTimeInterval(300))
        try await store.createCeremony(id: "c2", state: Data("{}".utf8), expiresAt: now.addingTimeInterval(300))
        try await store.createCeremony(id: "c3", state: Data("{}".utf8), expiresAt: now.addingTimeInterval(10))
        try await store.createCeremony(id: "c4", state: Data("{}".utf8), expiresAt: now.addingTimeInterval(11))
        // Eight concurrent answers to one ceremony: exactly one gets it.
        let taken = try await withThrowingTaskGroup(of: Data?.self) { group in
            for _ in 0..<8 { group.addTask { try await store.takeCeremony(id: "c1", now: now) } }
            return try await group.reduce(into: [Data]()) { if let d = $1 { $0.append(d) } }
        }
        #expect(taken == [Data("{\"a\":1}".utf8)])
        #expect(try await store.takeCeremony(id: "c2", now: now.addingTimeInterval(300)) == nil, "expired at 300 s")
        #expect(try await store.takeCeremony(id: "c2", now: now) == nil, "a late attempt spent it")
        try await store.purgeExpiredCeremonies(now: now.addingTimeInterval(10))
        #expect(try await store.takeCeremony(id: "c3", now: now) == nil, "purged")
        #expect(try await store.takeCeremony(id: "c4", now: now) == Data("{}".utf8), "not yet expired: kept")
        // A carried ceremony (a discoverable sign-in's) is recorded once, even by concurrent answers, and
        // purged with the rest once expired.
        let spent = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await store.spendCeremony(id: "s1.carried", expiresAt: now.addingTimeInterval(300), now: now)
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(spent == 1)
        #expect(try await !store.spendCeremony(id: "s1.carried", expiresAt: now.addingTimeInterval(300), now: now))
        try await store.purgeExpiredCeremonies(now: now.addingTimeInterval(300))
        #expect(try await store.spendCeremony(id: "s1.carried", expiresAt: now.addingTimeInterval(600), now: now))
        await h.close()
    }

    @Test(arguments: Backend.available)
    func aPasskeyKeepsItsPRFSaltAndOneWithoutGetsOneOnce(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let a = try await Self.account(h, "prfsalt")
        var p = Self.passkey("s1", account: a, credential: [1, 2, 3], at: h.clock.now())
        #expect(try await h.storage.addPasskey(p, max: 10, spending: nil) == .added)
        #expect(try await h.storage.passkey(credentialID: [1, 2, 3])?.prfSalt == p.prfSalt)
        // A passkey stored before salts were kept (NULL) gets the first one offered, and keeps it.
        p = Self.passkey("s2", account: a, credential: [4, 5, 6], at: h.clock.now())
        p.prfSalt = []
        #expect(try await h.storage.addPasskey(p, max: 10, spending: nil) == .added)
        let first = try await h.storage.setPRFSaltIfMissing(id: "s2", salt: Array(repeating: 1, count: 32))
        let second = try await h.storage.setPRFSaltIfMissing(id: "s2", salt: Array(repeating: 2, count: 32))
        #expect(first == Array(repeating: 1, count: 32) && second == first)
        #expect(try await h.storage.setPRFSaltIfMissing(id: "s1", salt: [9]) == Array(repeating: 7, count: 32))
        await h.close()
    }

    @Test(arguments: Backend.available)
    func userHandlesAreMadeOnceAndFindTheirAccount(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let a = try await Self.account(h, "handle1")
        let first = try await h.storage.userHandle(accountID: a, candidate: Array(repeating: 1, count: 16))
        let again = try await h.storage.userHandle(accountID: a, candidate: Array(repeating: 2, count: 16))
        #expect(first == Array(repeating: 1, count: 16) && again == first)
        #expect(try await h.storage.account(userHandle: first) == a)
        #expect(try await h.storage.account(userHandle: Array(repeating: 2, count: 16)) == nil)
        await h.close()
    }

    /// A registration spends its ceremony in the transaction that stores its passkey: of concurrent answers
    /// to one ceremony exactly one stores a passkey; a refusal spends it too; looking does not spend it.
    @Test(arguments: Backend.available)
    func aRegistrationSpendsItsCeremonyWithItsPasskey(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let now = h.clock.now()
        let a = try await Self.account(h, "spender")
        let store = h.storage
        for id in ["r1", "r2", "r3"] {
            try await store.createCeremony(id: id, state: Data("{}".utf8), expiresAt: now.addingTimeInterval(300))
        }
        #expect(try await store.ceremony(id: "r1", now: now) == Data("{}".utf8))
        #expect(try await store.ceremony(id: "r1", now: now) == Data("{}".utf8), "looking twice: still there")
        #expect(try await store.ceremony(id: "r1", now: now.addingTimeInterval(300)) == nil, "expired at 300 s")
        let results = try await withThrowingTaskGroup(of: PasskeyAddResult.self) { group in
            for i in 0..<8 {
                group.addTask {
                    try await store.addPasskey(
                        Self.passkey("s\(i)", account: a, credential: [5, UInt8(i)], at: now),
                        max: 10,
                        spending: ("r1", now)
                    )
                }
            }
            return try await group.reduce(into: [PasskeyAddResult]()) { $0.append($1) }
        }
        #expect(results.filter { $0 == .added }.count == 1 && results.filter { $0 == .ceremonyGone }.count == 7)
        #expect(try await store.passkeys(accountID: a).count == 1)
        #expect(try await store.ceremony(id: "r1", now: now) == nil)
        #expect(try await store.takeCeremony(id: "r1", now: now) == nil)
        // Refused (over a cap of 1): nothing stored, the ceremony spent all the same.
        #expect(
            try await store.addPasskey(
                Self.passkey("t", account: a, credential: [6, 6], at: now),
                max: 1,
                spending: ("r2", now)
            )
                == .tooMany
        )
        #expect(try await store.ceremony(id: "r2", now: now) == nil)
        // Expired by the time the passkey's transaction runs: nothing stored.
        #expect(
            try await store.addPasskey(
                Self.passkey("u", account: a, credential: [7, 1], at: now),
                max: 10,
                spending: ("r3", now.addingTimeInterval(300))
            ) == .ceremonyGone
        )
        #expect(try await store.passkey(credentialID: [7, 1]) == nil)
        #expect(try await store.passkey(credentialID: [6, 6]) == nil)
        await h.close()
    }

    @Test(arguments: Backend.available)
    func aCredentialBelongsToOneAccountAndTenIsTheMost(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let now = h.clock.now()
        let a = try await Self.account(h, "pkowner")
        let b = try await Self.account(h, "pkother")
        let store = h.storage
        #expect(
            try await store.addPasskey(
                Self.passkey("p0", account: a, credential: [0, 1], at: now),
                max: 10,
                spending: nil
            ) == .added
        )
        #expect(
            try await store.addPasskey(
                Self.passkey("p1", account: b, credential: [0, 1], at: now),
                max: 10,
                spending: nil
            )
                == .credentialTaken
        )
        // 20 registrations race for the 9 places left.
        let results = try await withThrowingTaskGroup(of: PasskeyAddResult.self) { group in
            for i in 1...20 {
                group.addTask {
                    try await store.addPasskey(
                        Self.passkey("r\(i)", account: a, credential: [1, UInt8(i)], at: now),
                        max: 10,
                        spending: nil
                    )
                }
            }
            return try await group.reduce(into: [PasskeyAddResult]()) { $0.append($1) }
        }
        #expect(results.filter { $0 == .added }.count == 9 && results.filter { $0 == .tooMany }.count == 11)
        let listed = try await store.passkeys(accountID: a)
        #expect(listed.count == 10 && Set(listed.map(\.credentialID)).count == 10)
        let p0 = try #require(try await store.passkey(credentialID: [0, 1]))
        #expect(p0 == Self.passkey("p0", account: a, credential: [0, 1], at: Date(ms: now.ms)))
        #expect(try await store.passkeys(accountID: b).isEmpty)
        // Rename and remove only within the owner's account.
        #expect(try await !store.renamePasskey(id: "p0", accountID: b, name: "Mine now"))
        #expect(try await store.renamePasskey(id: "p0", accountID: a, name: "Laptop"))
        #expect(try await store.passkey(credentialID: [0, 1])?.name == "Laptop")
        // Removing ends the sessions its sign-ins made, but the one kept; other sessions stay.
        func session(_ hash: String, _ account: String, passkey: String?) async throws {
            try await store.createSession(
                SessionRecord(
                    tokenHash: hash,
                    accountID: account,
                    createdAt: now,
                    lastUsedAt: now,
                    authenticatedAt: now,
                    expiresAt: now.addingTimeInterval(3600),
                    address: "192.0.2.1",
                    userAgent: "t",
                    passkeyID: passkey
                )
            )
        }
        try await session("by-p0", a, passkey: "p0")
        try await session("by-p0-kept", a, passkey: "p0")
        try await session("by-r1", a, passkey: "r1")
        try await session("by-password", a, passkey: nil)
        #expect(try await store.session(tokenHash: "by-p0")?.passkeyID == "p0")
        #expect(try await !store.removePasskey(id: "p0", accountID: b, keepingSession: ""))
        #expect(try await store.session(tokenHash: "by-p0") != nil, "another account's removal ends nothing")
        #expect(try await store.removePasskey(id: "p0", accountID: a, keepingSession: "by-p0-kept"))
        #expect(try await store.passkey(credentialID: [0, 1]) == nil)
        #expect(try await store.session(tokenHash: "by-p0") == nil)
        for kept in ["by-p0-kept", "by-r1", "by-password"] {
            #expect(try await store.session(tokenHash: kept) != nil, "\(kept)")
        }
        #expect(
            try await store.addPasskey(
                Self.passkey("p1", account: b, credential: [0, 1], at: now),
                max: 10,
                spending: nil
            ) == .added
        )
        // No account row, nothing to count against: refused on both backends.
        #expect(
            try await store.addPasskey(
                Self.passkey("x", account: "no-such-account", credential: [9, 9], at: now),
                max: 10,
                spending: nil
            )
                == .accountNotFound
        )
        #expect(try await store.passkey(credentialID: [9, 9]) == nil)
        await h.close()
    }

    @Test(arguments: Backend.available)
    func aUseIsRecordedOnlyOverTheCountItWasCheckedAgainst(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let now = h.clock.now()
        let a = try await Self.account(h, "pkcounter")
        let store = h.storage
        #expect(
            try await store.addPasskey(
                Self.passkey("p", account: a, credential: [7, 7], at: now),
                max: 10,
                spending: nil
            ) == .added
        )
        // Two assertions checked against count 0: one is recorded, the other must be refused.
        let recorded = try await withThrowingTaskGroup(of: Bool.self) { group in
            for n in [UInt32(5), 6] {
                group.addTask {
                    try await store.recordPasskeyUse(id: "p", expectedCount: 0, newCount: n, backedUp: true, at: now)
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(recorded.filter { $0 }.count == 1)
        let after = try #require(try await store.passkey(credentialID: [7, 7]))
        #expect([5, 6].contains(after.signCount) && after.backedUp && after.lastUsedAt == Date(ms: now.ms))
        #expect(try await !store.recordPasskeyUse(id: "nope", expectedCount: 0, newCount: 1, backedUp: false, at: now))
        // A counterless authenticator (always 0): recorded while the stored count is still 0, not over a
        // stale one.
        #expect(
            try await store.addPasskey(
                Self.passkey("z", account: a, credential: [8, 8], at: now),
                max: 10,
                spending: nil
            ) == .added
        )
        #expect(try await store.recordPasskeyUse(id: "z", expectedCount: 0, newCount: 0, backedUp: false, at: now))
        #expect(try await !store.recordPasskeyUse(id: "p", expectedCount: 0, newCount: 7, backedUp: false, at: now))
        await h.close()
    }
}
