import CountersignAPI
import CountersignClient
import CountersignCrypto
import Foundation
import Synchronization
import Testing

@testable import CountersignServer

/// Collecting an approved sign-in (push approval, QR code) spends its record in the same write as the
/// session it gives. A collection that dies at the session's write (here the hook throws just before it,
/// as a kill or a lost database would end it) leaves the record uncollected, so the client's retry gets
/// the session; before, the record was already marked collected and the retry got 409 already-collected.
@Suite(.closesStorage) struct CollectOnceTests {
    /// Throws once, at the next session start, when armed.
    final class Failure: Sendable {
        let armed = Mutex(false)
        func arm() { armed.withLock { $0 = true } }
        func hook(_: String) throws {
            let fire = armed.withLock { was in
                defer { was = false }
                return was
            }
            if fire { throw CancellationError() }
        }
    }

    static func sessions(_ h: Harness, _ accountID: String) async throws -> Int {
        try await h.storage.sql.raw("SELECT COUNT(*) AS n FROM sessions WHERE account_id = \(bind: accountID)").first()?
            .decode(column: "n", as: Int.self) ?? -1
    }

    @Test(arguments: Backend.available)
    func aPushApprovedSignInDyingAtItsSessionIsCollectedOnRetry(_ backend: Backend) async throws {
        let failure = Failure()
        try await withLiveServer(
            backend,
            wrapStore: { HookedStore(base: $0, beforeStart: { try failure.hook($0) }, beforeFinish: { _ in }) }
        ) { server, h in
            // The SDK's authenticator signs its answer with the real clock.
            h.clock.advance(Date().timeIntervalSince(h.clock.now()))
            let person = try await Person.make("colette", server: server)
            let phone = try await person.pairAuthenticator(server: server)
            let account = try #require(try await h.storage.account(username: "colette"))
            let browser = CountersignClient(server: server)
            let pending: MFARequired
            do {
                _ = try await browser.signIn(username: "colette", password: "correct horse")
                Issue.record("a password alone gave a session")
                return
            } catch ClientError.secondFactorRequired(let p) {
                pending = p
            }
            var notification: NotificationObject?
            for _ in 0..<100 where notification == nil {
                notification = try await phone.pendingNotifications().first {
                    $0.transactionID == pending.transaction.id
                }
                if notification == nil { try await Task.sleep(for: .milliseconds(50)) }
            }
            let n = try #require(notification, "no challenge arrived")
            #expect(
                try await n.approve(numberMatchingPickedValue: pending.transaction.numberMatching?.number)
                    == "COMPLETED"
            )
            let before = try await Self.sessions(h, account.id)

            failure.arm()
            await #expect(throws: (any Error).self, "the collection dies at its session's write") {
                try await browser.completeSignIn(pending)
            }
            #expect(try await Self.sessions(h, account.id) == before, "no session was stored")
            try await browser.completeSignIn(pending)
            #expect(browser.token != nil, "the retry collects the approved sign-in")
            #expect(try await Self.sessions(h, account.id) == before + 1)
            let again = await #expect(throws: ClientError.self) { try await browser.completeSignIn(pending) }
            #expect(again?.code == .mfaAlreadyCollected, "\(String(describing: again))")
            #expect(try await Self.sessions(h, account.id) == before + 1, "once")
        }
    }

    @Test(arguments: Backend.available)
    func anApprovedQRCodeDyingAtItsSessionIsCollectedOnRetry(_ backend: Backend) async throws {
        let failure = Failure()
        try await withLiveServer(
            backend,
            wrapStore: { HookedStore(base: $0, beforeStart: { try failure.hook($0) }, beforeFinish: { _ in }) }
        ) { server, h in
            let (screen, created, _) = try await QRSignInTests.approved("quentin", server: server)
            let account = try #require(try await h.storage.account(username: "quentin"))
            let before = try await Self.sessions(h, account.id)
            failure.arm()
            await #expect(throws: (any Error).self) { _ = try await screen.completeAuthCodeSignIn(created) }
            #expect(try await Self.sessions(h, account.id) == before)
            _ = try await screen.completeAuthCodeSignIn(created)
            let after = try await Self.sessions(h, account.id)
            #expect(screen.token != nil && after == before + 1)
            let again = await #expect(throws: ClientError.self) { _ = try await screen.completeAuthCodeSignIn(created) }
            #expect(again?.code == .mfaAlreadyCollected, "\(String(describing: again))")
        }
    }

    /// Two collections at once: exactly one session, the other refused.
    @Test(arguments: Backend.available)
    func concurrentCollectionsOfOneCodeGiveOneSession(_ backend: Backend) async throws {
        try await withLiveServer(backend) { server, h in
            let (_, created, _) = try await QRSignInTests.approved("quincy", server: server)
            let account = try #require(try await h.storage.account(username: "quincy"))
            let before = try await Self.sessions(h, account.id)
            let results = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        (try? await CountersignClient(server: server).completeAuthCodeSignIn(created)) != nil
                    }
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(results.filter { $0 }.count == 1, "\(results)")
            #expect(try await Self.sessions(h, account.id) == before + 1)
        }
    }
}
