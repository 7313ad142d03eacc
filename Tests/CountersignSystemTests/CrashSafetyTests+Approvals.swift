import CountersignCrypto
import CountersignTestSupport
import Foundation
import Testing

@testable import CountersignClient

extension CrashSafetyTests {
    /// Push approvals and denials answered concurrently (three accounts, four waiting sign-ins each), some
    /// approved sign-ins collected at once, killed mid-flight. After the restart an acknowledged approval is
    /// COMPLETED and an acknowledged denial FAILED, and a late answer changes neither; nothing is ever the
    /// opposite of its answer; a session collected before the kill still works and cannot be collected
    /// again; an approved sign-in not yet collected gives exactly one session; and every collected sign-in
    /// has its session and audit row (collected and stored in one write: never collected with neither).
    @Test(arguments: ServeTests.backends)
    func approvalsKilledMidFlightKeepTheirAnswerAndCollectOnce(_ kind: String) async throws {
        let t = try CLI()
        let db = try ServeTests.database(kind, t)
        var rng = Self.seeded("approvals \(kind)")
        var server = try Server(database: db, in: t.dir, environment: Self.roomy)
        struct SignIn {
            let pending: MFARequired
            let notification: NotificationObject
            let identity: Identity
            let approve: Bool
            /// Collect the session as soon as the approval is acknowledged.
            let collect: Bool
        }
        var signIns: [SignIn] = []
        var accounts: [MFATests.Account] = []
        // Four waiting sign-ins per account: below both the cap on open ones (5) and on pushes without a
        // success (5).
        for a in 0..<3 {
            let account = try await MFATests.Account("approve\(a)", server: server.url)
            accounts.append(account)
            let identity = Identity.generate()
            let key = try await account.sdk.createPairingKey()
            let (phone, _) = try await CountersignAuthenticator.pair(
                key.uri,
                server: nil,
                name: "phone",
                identity: identity
            )
            for _ in 0..<4 {
                let (_, pending) = try await account.pendingSignIn(server: server.url)
                signIns.append(
                    SignIn(
                        pending: pending,
                        notification: try await MFATests.notification(phone, for: pending),
                        identity: identity,
                        approve: Bool.random(using: &rng),
                        collect: Bool.random(using: &rng)
                    )
                )
            }
        }

        let collecting = signIns.contains { $0.approve && $0.collect }
        let answered = Locked<Set<Int>>([])
        let collected = Locked<[Int: String]>([:])
        let burst = signIns.enumerated().map { i, s in
            Task {
                let number = s.pending.transaction.numberMatching?.number
                guard
                    let status = try? await s.approve
                        ? s.notification.approve(numberMatchingPickedValue: number) : s.notification.deny()
                else { return }
                #expect(status == (s.approve ? "COMPLETED" : "FAILED"))
                answered.withLock { _ = $0.insert(i) }
                guard s.approve, s.collect else { return }
                let browser = CountersignClient(server: s.notification.authenticator.client.server)
                guard let session = try? await browser.completeSignIn(s.pending) else { return }
                collected.withLock { $0[i] = session.token }
            }
        }
        try await Self.kill(
            server,
            after: Int.random(in: 1...6, using: &rng),
            jitter: .milliseconds(Int.random(in: 0...5, using: &rng))
        ) {
            // Not before a session has been collected, when one is to be: the kill must find one to check.
            let sessions = collected.withLock { $0.count }
            return collecting && sessions == 0 ? 0 : answered.withLock { $0.count } + sessions
        }
        for task in burst { await task.value }
        let acked = answered.withLock { $0 }
        let sessions = collected.withLock { $0 }
        print(
            "approvals \(kind): \(acked.count) answers and \(sessions.count) collections acknowledged before the kill"
        )

        server = try Server(database: db, in: t.dir, environment: Self.roomy)
        defer { _ = server.signal(SIGTERM) }
        let url = URL(string: server.url)!
        var completed = [Int](repeating: 0, count: accounts.count)
        for (i, s) in signIns.enumerated() {
            let browser = CountersignClient(server: url)
            let view = try await browser.mfaTransaction(s.pending)
            let id = "sign-in \(i) (\(s.approve ? "approved" : "denied"))"
            // Never the opposite of the answer given, acknowledged or not.
            #expect(
                ["PUSH_CONFIRMATION_REQUIRED", "PUSH_CONFIRMATION_TIMED_OUT", s.approve ? "COMPLETED" : "FAILED"]
                    .contains(view.status),
                "\(id): \(view.status)"
            )
            if acked.contains(i) {
                #expect(view.status == (s.approve ? "COMPLETED" : "FAILED"), "\(id): an acknowledged answer was lost")
                if !s.approve { #expect(view.failure == "denied", "\(id): \(view.failure ?? "no failure")") }
                // A late answer, the other way, changes nothing.
                var state = s.notification.authenticator.state
                state.server = server.url
                let phone = try CountersignAuthenticator(state: state, identity: s.identity)
                let late = NotificationObject(authenticator: phone, claims: s.notification.claims)
                let number = s.pending.transaction.numberMatching?.number
                await #expect(throws: PingOneError.failedPolicyRequirements, "\(id): answered twice") {
                    _ = try await s.approve ? late.deny() : late.approve(numberMatchingPickedValue: number)
                }
                #expect(try await browser.mfaTransaction(s.pending).status == view.status, "\(id)")
            }
            guard view.status == "COMPLETED" else {
                await #expect(throws: ClientError.self, "\(id): no session before an approval") {
                    try await browser.completeSignIn(s.pending)
                }
                continue
            }
            if let token = sessions[i] {
                #expect(try await ServeTests.request("GET", server.url + "/v1/me", token: token).0 == 200, "\(id)")
            } else if !(acked.contains(i) && s.collect) {
                // Never asked for: its one session is there to collect now.
                await #expect(throws: Never.self, "\(id): an approved sign-in gave no session") {
                    try await browser.completeSignIn(s.pending)
                }
            } else {
                // Asked for when the server died: collected then (the answer lost) or now, but once.
                _ = try? await browser.completeSignIn(s.pending)
            }
            await #expect(throws: ClientError.self, "\(id): collected twice") {
                try await browser.completeSignIn(s.pending)
            }
            completed[i / 4] += 1
        }
        // Each completed sign-in is collected by now, before the kill or after: each has its one audited
        // session start (`success-push`), which a collection cut between two writes would have lost.
        for (a, account) in accounts.enumerated() {
            let reader = CountersignClient(server: url, token: account.sdk.token)
            let pushed = try await reader.audit(limit: 100).events.filter {
                $0.kind == "sign-in" && $0.outcome == "success-push"
            }
            #expect(
                pushed.count == completed[a],
                "\(account.name): \(pushed.count) sessions for \(completed[a]) collected"
            )
        }
    }
}
