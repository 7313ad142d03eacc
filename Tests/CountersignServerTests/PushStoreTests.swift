import CountersignAPI
import Foundation
import SQLKit
import Testing

@testable import CountersignServer

/// The push channel's storage and signals, without sockets: tickets expire and are spent once, delayed
/// messages are claimed once however many nodes ask at the same moment, signals survive their text form.
@Suite(.closesStorage) struct PushStoreTests {
    @Test(arguments: Backend.available)
    func ticketsAreSingleUseAndExpire(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let store = h.storage
        let now = h.clock.now()
        try await store.createTicket(
            hash: "t1",
            deviceID: "d",
            sessionHash: "s1",
            expiresAt: now.addingTimeInterval(60)
        )
        try await store.createTicket(
            hash: "t2",
            deviceID: "d",
            sessionHash: "s2",
            expiresAt: now.addingTimeInterval(60)
        )
        #expect(try await store.spendTicket(hash: "t1", now: now.addingTimeInterval(59)) == "s1")
        #expect(try await store.spendTicket(hash: "t1", now: now.addingTimeInterval(59)) == nil, "spent")
        #expect(try await store.spendTicket(hash: "t2", now: now.addingTimeInterval(60)) == nil, "expired at 60 s")
        #expect(try await store.spendTicket(hash: "t2", now: now) == nil, "a failed attempt spends it too")
        #expect(try await store.spendTicket(hash: "nope", now: now) == nil)
        await h.close()
    }

    /// 200 due delayed messages, 8 claimers at once (as 8 nodes would): every message claimed exactly
    /// once, immediate and not-yet-due ones never.
    @Test(arguments: Backend.available)
    func delayedMessagesAreClaimedOnce(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        let sql = h.storage.database as! any SQLDatabase
        let now = h.clock.now()
        func insert(_ id: String, accepted: Date, deliver: Date) async throws {
            try await sql.raw(
                """
                INSERT INTO messages (id, sender_account, sender_device, sender_username, recipients, envelope, digest, size, accepted_at,
                                      deliver_at, expires_at, recipient_devices, fetched_by, acked_by, cancelled)
                VALUES (\(bind: id), 'a', 'd', 'alice', 'bob', \(bind: Data([1])), 'x', 1, \(bind: accepted.ms), \(bind: deliver.ms),
                        \(bind: now.addingTimeInterval(86_400).ms), 1, 0, 0, 0)
                """
            ).run()
        }
        for i in 0..<200 {
            try await insert("due\(i)", accepted: now.addingTimeInterval(-60), deliver: now.addingTimeInterval(-1))
        }
        for i in 0..<10 {
            try await insert("later\(i)", accepted: now.addingTimeInterval(-60), deliver: now.addingTimeInterval(60))
        }
        for i in 0..<10 {
            try await insert(
                "immediate\(i)",
                accepted: now.addingTimeInterval(-60),
                deliver: now.addingTimeInterval(-60)
            )
        }
        let store = h.storage
        let claims = try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var ids: [String] = []
                    while true {
                        let (claimed, _) = try await store.claimDue(now: now, limit: 7)
                        ids += claimed
                        if claimed.isEmpty { return ids }
                    }
                }
            }
            return try await group.reduce(into: [[String]]()) { $0.append($1) }
        }
        let counts = claims.map(\.count)
        #expect(counts.reduce(0, +) == 200, "\(counts)")
        #expect(Set(claims.joined()).count == 200, "each message claimed once, by one caller")
        #expect(
            try await store.claimDue(now: now.addingTimeInterval(61), limit: 100).messages.count == 10,
            "the later ones, when due, once"
        )
        #expect(try await store.claimDue(now: now.addingTimeInterval(61), limit: 100).messages.isEmpty)
        await h.close()
    }

    @Test func signalsRoundTripAndSplit() {
        let signals: [PushSignal] = [
            .due(accounts: ["a", "b"]), .ended(.account("a")), .ended(.device("d")),
            .ended(.deviceSession(tokenHash: "h")), .connected(deviceID: "d", connectionID: "c"),
            .challenge(devices: ["d1", "d2"]), .transaction(id: "t1"),
        ]
        for s in signals { #expect(PushSignal(text: s.text) == s) }
        #expect(
            PushSignal(text: "x:y") == nil && PushSignal(text: "nocolon") == nil
                && PushSignal(text: "c:only-one") == nil
        )
        let accounts = (0..<1000).map { "account-\($0)-\(UUID().uuidString)" }
        let many = PushSignal.due(accounts: accounts)
        let parts = many.chunked()
        #expect(parts.count > 1 && parts.allSatisfy { $0.text.utf8.count <= 7000 })
        let rejoined: [String] = parts.flatMap { p -> [String] in
            if case .due(let a) = p { return a } else { return [] }
        }
        #expect(rejoined == accounts, "nothing lost or reordered by the split")
    }

    @Test func framesDecodeUnknownTypesWithoutFailing() throws {
        let decoder = APICoding.decoder()
        #expect(
            try decoder.decode(PushFrame.self, from: Data(#"{"type":"somethingNewer","x":1}"#.utf8))
                == .unknown(type: "somethingNewer")
        )
        #expect(
            try decoder.decode(PushFrame.self, from: Data(#"{"type":"mfaChallenge","jwt":"a.b.c"}"#.utf8))
                == .mfaChallenge(jwt: "a.b.c")
        )
        #expect(
            try decoder.decode(PushFrame.self, from: Data(#"{"type":"ack","seqs":[1,2]}"#.utf8)) == .ack(seqs: [1, 2])
        )
        #expect(throws: DecodingError.self) { try decoder.decode(PushFrame.self, from: Data(#"{"type":"ack"}"#.utf8)) }
        #expect(throws: DecodingError.self) { try decoder.decode(PushFrame.self, from: Data(#"{"seqs":[1]}"#.utf8)) }
        let frame = PushFrame.ready(deviceId: "d", window: 64, pingInterval: 25)
        #expect(try decoder.decode(PushFrame.self, from: APICoding.encoder().encode(frame)) == frame)
    }
}
