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

/// What one account may send and keep, and what an empty fetch costs (issue 19, 10).
@Suite(.closesStorage) struct MessageLimitsTests {
    static func problem(_ error: any Error) -> ProblemDetails? {
        if case ClientError.problem(let p) = error { return p } else { return nil }
    }

    /// An account sends at most its rate; the next send is refused with 429 and Retry-After, and the
    /// window refills on the clock.
    @Test(arguments: Backend.available)
    func sendsPerAccountAreLimited(_ backend: Backend) async throws {
        try await withLiveServer(backend, configure: { $0.sendsPerAccount = .init(capacity: 5, window: 60) }) {
            server,
            h in
            let alice = try await Person.make("alice", server: server)
            _ = try await Person.make("bob", server: server)
            for n in 1...5 { _ = try await alice.send("message \(n)", to: ["bob"]) }
            do {
                _ = try await alice.send("one too many", to: ["bob"])
                Issue.record("the 6th send within a minute was accepted")
            } catch {
                let p = try #require(Self.problem(error), "\(error)")
                #expect(p.status == 429 && p.kind == .rateLimited && p.detail.contains("5 messages a minute"), "\(p)")
            }
            // A raw request shows the header, and is refused before its body is read.
            var r = URLRequest(url: server.appendingPathComponent("v1/messages"))
            r.httpMethod = "POST"
            r.setValue("Bearer \(try #require(alice.sdk.deviceToken))", forHTTPHeaderField: "Authorization")
            r.setValue("application/json", forHTTPHeaderField: "Content-Type")
            r.httpBody = Data("not even JSON".utf8)
            let (_, response) = try await URLSession.shared.data(for: r)
            let http = try #require(response as? HTTPURLResponse)
            #expect(http.statusCode == 429 && Int(http.value(forHTTPHeaderField: "Retry-After") ?? "") != nil)
            h.clock.advance(13)  // one send's worth of refill (60 s / 5)
            _ = try await alice.send("after a pause", to: ["bob"])
        }
    }

    /// The envelopes an account keeps stored are bounded: the send that would pass the quota is refused
    /// (429 message-quota-exceeded) and stores nothing; cancelling a delayed message makes room.
    @Test(arguments: Backend.available)
    func storedBytesPerAccountAreBounded(_ backend: Backend) async throws {
        let limit: Int64 = 8_000
        try await withLiveServer(backend, configure: { $0.messageQuotaBytes = limit }) { server, h in
            let alice = try await Person.make("alice", server: server)
            _ = try await Person.make("bob", server: server)
            let text = String(repeating: "x", count: 1_500)
            let account = try #require(try await h.store.account(username: "alice"))
            var sent: [SentMessage] = []
            var refusal: ProblemDetails?
            for _ in 0..<20 {
                do {
                    sent.append(try await alice.send(text, to: ["bob"], after: 3600))
                } catch {
                    refusal = Self.problem(error)
                    break
                }
            }
            let p = try #require(refusal, "20 sends of 1.5 KB passed a quota of 8 KB")
            #expect(p.status == 429 && p.kind == .messageQuotaExceeded, "\(p)")
            // The same send raw: the refusal says when to retry (the oldest stored message's expiry, at
            // least a minute away).
            var keys: [PublicKey] = []
            for user in ["bob", "alice"] {
                for d in try await alice.sdk.directory(username: user).devices {
                    keys.append(try PublicKey(spki: d.encryptionKey.bytes))
                }
            }
            let envelope = try MessageEnvelope.seal(
                Array(text.utf8),
                from: alice.identity,
                to: keys,
                created: h.clock.now()
            )
            var r = URLRequest(url: server.appendingPathComponent("v1/messages"))
            r.httpMethod = "POST"
            r.setValue("Bearer \(try #require(alice.sdk.deviceToken))", forHTTPHeaderField: "Authorization")
            r.setValue("application/json", forHTTPHeaderField: "Content-Type")
            r.httpBody = try JSONEncoder().encode(
                SendMessageRequest(to: ["bob"], envelope: Base64URL(envelope.bytes), deliverAfter: 3600)
            )
            let (body, response) = try await URLSession.shared.data(for: r)
            let http = try #require(response as? HTTPURLResponse)
            #expect(
                http.statusCode == 429
                    && (try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["code"] as? String
                        == "message-quota-exceeded",
                "\(http.statusCode) \(String(decoding: body, as: UTF8.self))"
            )
            let retryAfter = Int(http.value(forHTTPHeaderField: "Retry-After") ?? "")
            #expect(retryAfter.map { $0 >= 60 } == true, "Retry-After: \(String(describing: retryAfter))")
            let usage = try await h.storage.storedBytes(senderAccountID: account.id, now: h.clock.now())
            let one = usage.bytes / Int64(sent.count)
            #expect(
                usage.bytes <= limit && usage.bytes + one > limit,
                "\(usage.bytes) stored in \(sent.count) messages"
            )
            #expect(
                try await h.storage.allMessages(limit: 100).count == sent.count,
                "the refused send stored nothing"
            )
            // Cancelling one delayed message frees its bytes for the next send.
            try await alice.sdk.cancelMessage(id: sent[0].id)
            _ = try await alice.send(text, to: ["bob"], after: 3600)
        }
    }

    /// A fetch with no first fetch to record (nothing due, or only entries fetched before and not yet
    /// acknowledged) takes no write lock: it answers at once while another connection holds the SQLite
    /// file's write lock.
    @Test func aFetchWithNothingNewTakesNoWriteLock() async throws {
        try await withLiveServer(.sqlite) { server, h in
            let alice = try await Person.make("alice", server: server)
            let bob = try await Person.make("bob", server: server)
            guard case .sqlite(let path) = h.config.database else { return }
            func underWriteLock<T: Sendable>(_ body: () async throws -> T) async throws -> (T, Duration) {
                let holder = try DirectSQLite(path: path, readOnly: false)
                try holder.execute("BEGIN IMMEDIATE")
                let started = ContinuousClock.now
                let result = try await body()
                let took = ContinuousClock.now - started
                try holder.execute("ROLLBACK")
                holder.close()
                return (result, took)
            }
            let (empty, tookEmpty) = try await underWriteLock { try await alice.sdk.fetchMessages() }
            #expect(empty.messages.isEmpty)
            // A fetch that needed the lock would wait out the busy timeout (5 s) and fail; below it, with
            // room for a loaded machine, it did not wait.
            #expect(tookEmpty < .seconds(4.5), "an empty fetch waited \(tookEmpty) for the write lock")
            let sent = try await bob.send("fetched, not acknowledged", to: ["alice"])
            #expect(
                try await alice.sdk.fetchMessages().messages.map(\.id) == [sent.id],
                "the first fetch records the receipt"
            )
            let (again, tookAgain) = try await underWriteLock { try await alice.sdk.fetchMessages() }
            #expect(again.messages.map(\.id) == [sent.id], "unacknowledged entries come again")
            #expect(
                tookAgain < .seconds(4.5),
                "a fetch of entries fetched before waited \(tookAgain) for the write lock"
            )
            #expect(try await bob.sdk.messageStatus(id: sent.id).fetchedBy == 1, "the receipt was counted once")
        }
    }

    /// Push tickets (a row each until used or purged) are limited per device, 30 a minute; authenticator
    /// log uploads (up to 256 KiB each) 10 a day (issue 19, 8).
    @Test(arguments: Backend.available)
    func pushTicketsAndLogUploadsAreLimitedPerDevice(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let hana = try await Person.make("hana", server: server)
            for _ in 0..<30 { _ = try await hana.sdk.pushTicket() }
            let tickets = await #expect(throws: ClientError.self) { _ = try await hana.sdk.pushTicket() }
            #expect(tickets.flatMap(Self.problem)?.status == 429, "\(String(describing: tickets))")
            let other = try await Person.make("ida", server: server)
            _ = try await other.sdk.pushTicket()  // another device is not held up
            h.clock.advance(2)
            _ = try await hana.sdk.pushTicket()

            let phone = try await hana.pairAuthenticator(server: server)
            for n in 0..<10 { _ = try await phone.sendLogs(["log \(n)"]) }
            let logs = await #expect(throws: ClientError.self) { _ = try await phone.sendLogs(["one too many"]) }
            #expect(logs.flatMap(Self.problem)?.status == 429, "\(String(describing: logs))")
            h.clock.advance(86_400 / 10 + 1)
            _ = try await phone.sendLogs(["a day's tenth later"])
        }
    }

    /// Concurrent requests for pairing keys cannot exceed the 3 open per account.
    @Test(arguments: Backend.available)
    func openPairingKeysStayCappedUnderConcurrency(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("fritz")
            let token = try await api.token("fritz")
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<12 {
                    group.addTask {
                        try await api.call(.post, "/v1/me/mfa/pairing-keys", json: [:], token: token).status
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(
                statuses.filter { $0 == 201 || $0 == 200 }.count == PairingKey.maxOpenPerAccount,
                "\(statuses.sorted())"
            )
            #expect(statuses.filter { $0 == 409 }.count == 12 - PairingKey.maxOpenPerAccount, "\(statuses.sorted())")
        }
    }
}
