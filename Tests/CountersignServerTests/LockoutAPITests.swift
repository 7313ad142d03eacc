import Foundation
import Testing

@testable import CountersignServer

/// The lockout rule over HTTP: exact sequence, enumeration safety, atomicity under 100 concurrent attempts.
@Suite(.closesStorage) struct LockoutAPITests {
    /// status/code of each response, for comparing a real username's sequence with an unknown one's.
    static func shape(_ r: API.Reply) -> String {
        let keys = r.json.keys.filter { !["detail", "retryAt"].contains($0) }.sorted().joined(separator: ",")
        return "\(r.status) \(r.code ?? "-") [\(keys)] retry-after:\(r.headers[.retryAfter] ?? "-")"
    }

    @Test(arguments: Backend.available)
    func exactSequenceAndUnknownUsernamesAnswerTheSame(_ backend: Backend) async throws {
        let h = try await Harness.make(backend)
        try await h.run { api in
            try await api.register("victim")
            var sequences: [[String]] = []
            for name in ["victim", "nobody-here"] {
                let start = h.clock.now()
                var seen: [String] = []
                for _ in 0..<3 { seen.append(Self.shape(try await api.signIn(name, "wrong password"))) }
                let delayed = try await api.signIn(name, "correct horse")
                #expect(
                    delayed.status == 429 && delayed.code == "sign-in-delayed",
                    "refused even with the right password while delayed"
                )
                #expect(delayed.headers[.retryAfter] == "1800")
                seen.append(Self.shape(delayed))
                h.clock.advance(30 * 60)
                seen.append(Self.shape(try await api.signIn(name, "wrong password")))  // 4th: delayed again
                seen.append(Self.shape(try await api.signIn(name, "wrong password")))  // still delayed
                h.clock.advance(30 * 60)
                let fifth = try await api.signIn(name, "wrong password")
                #expect(fifth.status == 401 && fifth.json["locked"] as? Bool == true)
                seen.append(Self.shape(fifth))
                h.clock.advance(24 * 3600)
                let locked = try await api.signIn(name, "correct horse")
                #expect(
                    locked.status == 423 && locked.code == "account-locked",
                    "after the lock the correct password is refused"
                )
                seen.append(Self.shape(locked))
                sequences.append(seen)
                _ = start
            }
            #expect(
                sequences[0] == sequences[1],
                "an unknown username goes through the same responses:\n\(sequences[0])\n\(sequences[1])"
            )
            #expect(sequences[0][2].hasPrefix("401 invalid-credentials"))
            #expect(sequences[0][4].hasPrefix("401"), "the 4th failure after the delay is checked")
            #expect(sequences[0][5].hasPrefix("429 sign-in-delayed"))
            // The 4th failure, and it alone, says that one more locks (for an unknown username too, above).
            #expect(
                sequences[0].enumerated().filter { $0.element.contains("oneMoreLocks") }.map(\.offset) == [4],
                "\(sequences[0])"
            )
            #expect(!sequences[0].contains { $0.contains("contact") }, "no contact configured, none said")
        }
        // An administrator unlocks; a success resets the count.
        #expect(
            try await CountersignServer.unlock(
                username: "VICTIM",
                database: h.config.database,
                logger: .init(label: "t")
            )
            .hasPrefix("unlocked victim")
        )
        let again = try await Harness.make(backend, location: h.config.database, clock: h.clock)
        try await again.run { api in
            let wrong = try await api.signIn("victim", "wrong password")
            let right = try await api.signIn("victim", "correct horse")
            let state = try await again.store.loginGuard(username: "victim")
            #expect(wrong.status == 401 && right.status == 201 && state?.failures == 0)
        }
        await #expect(throws: ConfigurationError.self) {
            try await CountersignServer.unlock(
                username: "nobody-here",
                database: h.config.database,
                logger: .init(label: "t")
            )
        }
    }

    /// The administrator's contact, when configured, is in the failure that locks and in every refusal of
    /// the locked account, words and member; the next-to-last failure's words say what one more does.
    @Test(arguments: Backend.available)
    func aLockedAccountSaysWhomToAsk(_ backend: Backend) async throws {
        let contact = "the IT desk, 555-0100"
        let h = try await Harness.make(backend) { $0.adminContact = contact }
        try await h.run { api in
            try await api.register("carol")
            var replies: [API.Reply] = []
            for _ in 0..<5 {
                replies.append(try await api.signIn("carol", "wrong password"))
                h.clock.advance(30 * 60)
            }
            let fourth = replies[3]
            #expect(fourth.json["oneMoreLocks"] as? Bool == true)
            #expect((fourth.json["detail"] as? String)?.contains("One more failure locks the account") == true)
            let fifth = replies[4]
            #expect(fifth.status == 401 && fifth.json["locked"] as? Bool == true && fifth.json["oneMoreLocks"] == nil)
            #expect(fifth.json["contact"] as? String == contact)
            #expect(
                (fifth.json["detail"] as? String)?.hasSuffix("Ask \(contact) to unlock it.") == true,
                "\(fifth.json)"
            )
            let locked = try await api.signIn("carol", "correct horse")
            #expect(locked.status == 423 && locked.json["contact"] as? String == contact)
            #expect((locked.json["detail"] as? String)?.contains("Ask \(contact) to unlock it.") == true)
        }
        #expect(ServerConfiguration.adminContact("  it@example.com ") == "it@example.com")
        let refusedContacts = [
            "", "   ", "a\nb", "a\u{2028}b", "evil\u{202E}moc.elpmaxe", "zero\u{200B}width",
            String(repeating: "x", count: 201), "a" + String(repeating: "\u{0301}", count: 200),
        ]
        for refused in refusedContacts {
            #expect(ServerConfiguration.adminContact(refused) == nil, "\(refused.debugDescription)")
        }
    }

    static func failures(_ h: Harness) async throws -> Int {
        try await h.store.loginGuard(username: "target")?.failures ?? 0
    }

    /// However many requests arrive at once, at most 3 password checks run before the delay; each
    /// checked attempt answers 401, every other one is refused unchecked.
    @Test(arguments: Backend.available)
    func hundredConcurrentAttemptsCheckAtMostThree(_ backend: Backend) async throws {
        // A generous address budget: this test is about the per-username rule, not the per-address one.
        let h = try await Harness.make(backend) { $0.signInFailuresPerAddress = .init(capacity: 10_000, window: 600) }
        try await h.run { api in
            try await api.register("target")
            let replies = try await withThrowingTaskGroup(of: API.Reply.self) { group in
                for _ in 0..<100 { group.addTask { try await api.signIn("target", "wrong password") } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let checked = replies.filter { $0.status == 401 }.count
            // Checked (401) or refused unchecked: delayed (429), or shed when every database connection
            // stayed busy (503 server-busy, as a loaded CI machine may); never anything else.
            let unexpected = replies.filter {
                !([401, 429].contains($0.status) || ($0.status == 503 && $0.code == "server-busy"))
            }
            #expect(unexpected.isEmpty, "\(unexpected.map { "\($0.status) \($0.code ?? "")" })")
            // At most 3 checked, each counted; a loaded machine may shed part of the burst unchecked, and
            // then the rest of the rule is reached one attempt at a time.
            let counted = try await Self.failures(h)
            #expect(
                checked <= counted && counted <= 3,
                "\(Dictionary(grouping: replies, by: { $0.code ?? "?" }).mapValues(\.count))"
            )
            for _ in min(counted, 3)..<3 {
                let r = try await api.signIn("target", "wrong password")
                #expect(r.status == 401, "\(r.status) \(r.code ?? "")")
            }
            #expect(try await Self.failures(h) == 3)
            let delayed = try await api.signIn("target", "wrong password")
            #expect(delayed.code == "sign-in-delayed", "\(delayed.status) \(delayed.code ?? "")")
            // After the delay, a concurrent burst checks at most one attempt (the 4th failure delays again).
            h.clock.advance(30 * 60)
            let burst = try await withThrowingTaskGroup(of: API.Reply.self) { group in
                for _ in 0..<100 { group.addTask { try await api.signIn("target", "wrong password") } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(burst.filter { $0.status == 401 }.count <= 1)
            if try await Self.failures(h) < 4 {
                let r = try await api.signIn("target", "wrong password")
                #expect(r.status == 401, "\(r.status) \(r.code ?? "")")
            }
            #expect(try await Self.failures(h) == 4)
            h.clock.advance(30 * 60)
            _ = try await api.signIn("target", "wrong password")
            let correct = try await withThrowingTaskGroup(of: API.Reply.self) { group in
                for _ in 0..<100 { group.addTask { try await api.signIn("target", "correct horse") } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // Refused locked, or shed unchecked when every database connection stayed busy (a loaded CI machine).
            #expect(
                correct.allSatisfy { $0.status == 423 || ($0.status == 503 && $0.code == "server-busy") },
                "after the lock the correct password is refused: \(correct.map { "\($0.status) \($0.code ?? "")" })"
            )
            let locked = try await api.signIn("target", "correct horse")
            #expect(locked.status == 423, "\(locked.status) \(locked.code ?? "")")
            #expect(try await h.store.loginGuard(username: "target")?.failures == 5)
        }
    }

    @Test(arguments: Backend.available)
    func perAddressThrottleStopsStuffingAcrossUsernames(_ backend: Backend) async throws {
        let h = try await Harness.make(backend) { $0.signInFailuresPerAddress = .init(capacity: 5, window: 60) }
        try await h.run { api in
            for i in 0..<5 { #expect(try await api.signIn("user\(i)", "wrong password").status == 401) }
            let r = try await api.signIn("user9", "wrong password")
            #expect(r.status == 429 && r.code == "rate-limited" && Int(r.headers[.retryAfter] ?? "") != nil)
            h.clock.advance(12)
            #expect(try await api.signIn("user9", "wrong password").status == 401, "the bucket refills")
            // 100 at once across 100 usernames: the tokens are taken before the checks, so one more passes.
            h.clock.advance(12)
            let burst = try await withThrowingTaskGroup(of: API.Reply.self) { group in
                for i in 0..<100 { group.addTask { try await api.signIn("stuffed\(i)", "wrong password") } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(
                burst.filter { $0.status == 401 }.count == 1,
                "\(Dictionary(grouping: burst, by: { $0.code ?? "?" }).mapValues(\.count))"
            )
            #expect(burst.filter { $0.code == "rate-limited" }.count == 99)
        }
    }

    @Test func successesDoNotSpendTheAddressBudget() async throws {
        let h = try await Harness.make(.sqlite) { $0.signInFailuresPerAddress = .init(capacity: 2, window: 600) }
        try await h.run { api in
            try await api.register("often")
            for _ in 0..<10 { #expect(try await api.signIn("often").status == 201) }
        }
    }

    /// Past the queue limit the server answers 503 at once; those attempts reserve nothing and count nothing.
    @Test func aFullHashQueueAnswers503AndCountsNothing() async throws {
        let h = try await Harness.make(.sqlite) {
            $0.maxQueuedHashes = 1
            $0.hasher = .owasp
        }
        try await h.run { api in
            // The hash threads are held until 19 answers are back, so the one admitted check waits in the
            // queue while the others arrive, however fast or loaded the machine (a loaded CI run once
            // finished each check before the next arrived). A timeout lets them go if the answers never come.
            let gate = DispatchSemaphore(value: 0)
            let held = DispatchSemaphore(value: 0)
            let release: @Sendable () -> Void = { for _ in 0..<HashThreads.threadCount { gate.signal() } }
            for _ in 0..<HashThreads.threadCount {
                Task.detached {
                    try await HashThreads.run {
                        held.signal()
                        gate.wait()
                    }
                }
            }
            for _ in 0..<HashThreads.threadCount {
                while held.wait(timeout: .now()) == .timedOut { try await Task.sleep(for: .milliseconds(5)) }
            }
            let timeout = Task {
                try await Task.sleep(for: .seconds(30))
                release()
            }
            let replies = try await withThrowingTaskGroup(of: API.Reply.self) { group in
                for i in 0..<20 { group.addTask { try await api.signIn("queued\(i)", "wrong password") } }
                var replies: [API.Reply] = []
                for try await reply in group {
                    replies.append(reply)
                    if replies.count == 19 { release() }
                }
                return replies
            }
            timeout.cancel()
            let busy = replies.filter { $0.code == "server-busy" }
            #expect(busy.count == 19 && busy.allSatisfy { $0.status == 503 && $0.headers[.retryAfter] == "1" })
            #expect(
                replies.allSatisfy { [401, 503].contains($0.status) },
                "\(replies.map { "\($0.status) \($0.code ?? "")" })"
            )
            var counted = 0
            for i in 0..<20 {
                let g = try await h.store.loginGuard(username: "queued\(i)")
                #expect(g?.pending ?? 0 == 0, "no reservation left behind")
                counted += g?.failures ?? 0
            }
            #expect(counted == replies.filter { $0.status == 401 }.count)
        }
    }
}
