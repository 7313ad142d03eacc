import CountersignCrypto
import CountersignTestSupport
import Foundation
import Testing

@testable import CountersignClient

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Multi-factor sign-in through real `countersign serve` processes and the SDK (docs/PROTOCOL.md §3): pairing,
/// push approval with number matching, passcodes, recovery codes, authentication codes, and the refusals.
@Suite struct MFATests {
    struct Account {
        let sdk: CountersignClient
        let name: String
        init(_ name: String, server: String) async throws {
            self.name = name
            sdk = CountersignClient(server: URL(string: server)!)
            try await sdk.register(username: name, password: "correct horse", name: "N", lastname: "L")
            try await sdk.signIn(username: name, password: "correct horse")
        }

        func pair(_ deviceName: String) async throws -> CountersignAuthenticator {
            let key = try await sdk.createPairingKey()
            let (authenticator, info) = try await CountersignAuthenticator.pair(
                key.uri,
                server: nil,
                name: deviceName,
                identity: Identity.generate()
            )
            #expect(info.authenticators.map(\.status) == ["COMPLETED", "COMPLETED"] && info.username == name)
            return authenticator
        }

        /// A fresh client's password sign-in, which must stop at the second factor.
        func pendingSignIn(server: String) async throws -> (CountersignClient, MFARequired) {
            let c = CountersignClient(server: URL(string: server)!)
            do {
                _ = try await c.signIn(username: name, password: "correct horse")
            } catch ClientError.secondFactorRequired(let pending) {
                return (c, pending)
            }
            Issue.record("a password alone gave a session")
            throw CancellationError()
        }
    }

    /// The challenge for this transaction, by polling (the push channel is tested below).
    static func notification(_ a: CountersignAuthenticator, for pending: MFARequired) async throws -> NotificationObject
    {
        for _ in 0..<50 {
            if let n = try await a.pendingNotifications().first(where: { $0.transactionID == pending.transaction.id }) {
                return n
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw CocoaError(.fileReadNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "no challenge arrived"])
    }

    @Test(arguments: ServeTests.backends)
    func pushApprovalWithNumberMatching(_ kind: String) async throws {
        let t = try CLI()
        let db = try ServeTests.database(kind, t)
        let server = try ServeTests.Server(database: db, in: t.dir)
        let alice = try await Account("alice", server: server.url)
        let phone = try await alice.pair("phone")
        #expect(try await alice.sdk.mfaStatus().authenticators.map(\.name) == ["phone"])

        let (browser, pending) = try await alice.pendingSignIn(server: server.url)
        #expect(
            pending.transaction.status == "PUSH_CONFIRMATION_REQUIRED" && pending.transaction.methods.contains("push")
        )
        let number = try #require(pending.transaction.numberMatching?.number)
        #expect(number.count == 2)
        // The challenge reaches the authenticator over its push channel, signed by the server.
        let challenges = Task { () -> String? in
            for try await e in phone.client.events(backoff: 0.1...0.5) {
                if case .challenge(let jwt) = e { return jwt }
            }
            return nil
        }
        let jwt = try #require(try await challenges.value)
        let n = try #require(await phone.notification(from: jwt))
        #expect(
            n.transactionID == pending.transaction.id && n.username == "alice"
                && n.numberMatchingType == "ENTER_MANUALLY"
        )
        #expect(!jwt.contains(number) || n.numberMatchingOptions.isEmpty, "ENTER_MANUALLY never carries the number")
        await #expect(throws: ClientError.self, "no session before approval") {
            try await browser.completeSignIn(pending)
        }
        #expect(try await n.approve(numberMatchingPickedValue: number) == "COMPLETED")
        let session = try await browser.completeSignIn(pending)
        #expect(try await browser.me().username == "alice" && session.account.username == "alice")
        await #expect(throws: ClientError.self, "collected once") { try await browser.completeSignIn(pending) }
        await #expect(throws: PingOneError.failedPolicyRequirements, "a second answer changes nothing") {
            try await n.deny(report: true)
        }
        #expect(server.signal(SIGTERM) == 0)
    }

    @Test(arguments: ServeTests.backends)
    func reauthenticationAsksForThePushToo(_ kind: String) async throws {
        let t = try CLI()
        let db = try ServeTests.database(kind, t)
        let server = try ServeTests.Server(database: db, in: t.dir)
        let alice = try await Account("alice", server: server.url)
        let phone = try await alice.pair("phone")
        do {
            try await alice.sdk.reauthenticate(password: "correct horse")
            Issue.record("the password alone re-authenticated an account with a second factor")
        } catch ClientError.secondFactorRequired(let pending) {
            #expect(pending.transaction.status == "PUSH_CONFIRMATION_REQUIRED")
            let number = try #require(pending.transaction.numberMatching?.number)
            let n = try await Self.notification(phone, for: pending)
            #expect(n.isReauthentication && n.username == "alice", "the authenticator is told it is not a new sign-in")
            await #expect(throws: ClientError.self, "nothing before the approval") {
                try await alice.sdk.completeReauthentication(pending)
            }
            #expect(try await n.approve(numberMatchingPickedValue: number) == "COMPLETED")
            try await alice.sdk.completeReauthentication(pending)
            await #expect(throws: ClientError.self, "once") { try await alice.sdk.completeReauthentication(pending) }
            #expect(try await alice.sdk.me().username == "alice", "the same session goes on")
        }
        await #expect(throws: ClientError.self, "a wrong password starts nothing") {
            try await alice.sdk.reauthenticate(password: "wrong horse")
        }
        let (_, signIn) = try await alice.pendingSignIn(server: server.url)
        #expect(!(try await Self.notification(phone, for: signIn)).isReauthentication)
        #expect(server.signal(SIGTERM) == 0)
    }

    @Test(arguments: ServeTests.backends)
    func wrongNumberDenialReportAndFatigue(_ kind: String) async throws {
        let t = try CLI()
        let db = try ServeTests.database(kind, t)
        let server = try ServeTests.Server(database: db, in: t.dir)
        let alice = try await Account("alice", server: server.url)
        let phone = try await alice.pair("phone")

        let (_, p1) = try await alice.pendingSignIn(server: server.url)
        let wrong = p1.transaction.numberMatching!.number == "00" ? "01" : "00"
        #expect(try await Self.notification(phone, for: p1).approve(numberMatchingPickedValue: wrong) == "FAILED")
        let v1 = try await alice.sdk.mfaTransaction(p1)
        #expect(v1.status == "FAILED" && v1.failure == "wrong-number")

        // After a failure the next numbers have 6 digits.
        let (_, p2) = try await alice.pendingSignIn(server: server.url)
        #expect(p2.transaction.numberMatching?.number.count == 6, "escalated after a failed push")
        #expect(try await Self.notification(phone, for: p2).deny(report: true) == "FAILED")
        #expect(try await alice.sdk.mfaTransaction(p2).failure == "reported")
        #expect(try await alice.sdk.mfaStatus().pushSuspended)
        let (_, p3) = try await alice.pendingSignIn(server: server.url)
        #expect(
            p3.transaction.status == "OTP_REQUIRED" && !p3.transaction.methods.contains("push"),
            "push suspended after a report"
        )
        // Signing in another way lifts it.
        let (browser, p4) = try await alice.pendingSignIn(server: server.url)
        #expect(try await browser.submitPasscode(try phone.oneTimePasscode().passcode, for: p4).status == "COMPLETED")
        try await browser.completeSignIn(p4)
        #expect(try await !alice.sdk.mfaStatus().pushSuspended)
        #expect(server.signal(SIGTERM) == 0)
    }

    @Test(arguments: ServeTests.backends)
    func passcodesAppsAndRecoveryCodes(_ kind: String) async throws {
        let t = try CLI()
        let db = try ServeTests.database(kind, t)
        let server = try ServeTests.Server(database: db, in: t.dir)
        let bob = try await Account("bob", server: server.url)
        // An authenticator app: the enrollment URI gives oathtool the same codes.
        let enrollment = try await bob.sdk.enrollTOTP()
        #expect(
            enrollment.uri.hasPrefix("otpauth://totp/Countersign:bob?")
                && enrollment.uri.contains("secret=\(enrollment.secret)")
        )
        let code = try t.run("oathtool", ["--totp", "-b", enrollment.secret]).text.trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        #expect(code.count == 6)
        #expect(try await bob.sdk.confirmTOTP(code: code).totpApp)
        let codes = try await bob.sdk.regenerateRecoveryCodes()
        #expect(codes.count == 10 && Set(codes).count == 10)

        let (c1, p1) = try await bob.pendingSignIn(server: server.url)
        #expect(p1.transaction.status == "OTP_REQUIRED" && p1.transaction.methods == ["totp", "recoveryCode"])
        #expect(
            try await c1.submitPasscode(code, for: p1).status == "OTP_REQUIRED",
            "a code counts once: the confirm used it"
        )
        try await Task.sleep(for: .milliseconds(10))
        let (c2, p2) = try await bob.pendingSignIn(server: server.url)
        #expect(try await c2.submitRecoveryCode(codes[3].lowercased(), for: p2).status == "COMPLETED")
        try await c2.completeSignIn(p2)
        let (c3, p3) = try await bob.pendingSignIn(server: server.url)
        #expect(
            try await c3.submitRecoveryCode(codes[3], for: p3).status == "OTP_REQUIRED",
            "a recovery code is used once"
        )
        var left = try await c3.submitPasscode("000000", for: p3)
        while left.status == "OTP_REQUIRED" { left = try await c3.submitPasscode("000000", for: p3) }
        #expect(left.status == "FAILED" && left.failure == "too-many-codes")
        #expect(try await bob.sdk.mfaStatus().recoveryCodesLeft == 9)
        #expect(server.signal(SIGTERM) == 0)
    }

    @Test func authenticationCodes() async throws {
        let t = try CLI()
        let server = try ServeTests.Server(database: "sqlite:" + t.path("a.sqlite"), in: t.dir)
        let carol = try await Account("carol", server: server.url)
        let phone = try await carol.pair("phone")
        let screen = CountersignClient(server: URL(string: server.url)!)
        let created = try await screen.createAuthCode()
        #expect(created.code.count == 8 && created.uri.contains("authentication_code=\(created.code)"))
        #expect(try await screen.authCodeState(created).status == "PENDING")
        let claim = try await phone.authenticate(authCode: created.uri)
        #expect(
            claim.status == "CLAIMED" && claim.userApproval == "REQUIRED" && claim.users.map(\.username) == ["carol"]
        )
        await #expect(throws: ClientError.self, "nothing to collect before approval") {
            try await screen.completeAuthCodeSignIn(created)
        }
        #expect(try await claim.approve(userId: claim.users[0].userId) == "COMPLETED")
        try await screen.completeAuthCodeSignIn(created)
        #expect(try await screen.me().username == "carol")
        // The authenticator alone signed this session in: it may not change the second factors before the
        // password (and then the second factor) are given.
        let refused = await #expect(throws: ClientError.self, "a passwordless session is not a full authentication") {
            _ = try await screen.createPairingKey()
        }
        #expect(refused?.code == .reauthenticationRequired)

        let other = try await screen.createAuthCode()
        let second = try await phone.authenticate(authCode: other.code.lowercased())
        #expect(try await second.deny() == "DENIED")
        #expect(try await screen.authCodeState(other).status == "DENIED")
        await #expect(throws: PingOneError.authCodeInvalid) { try await phone.authenticate(authCode: other.code) }
        await #expect(throws: PingOneError.authCodeInvalid) { try await phone.authenticate(authCode: "ABCDEFGH") }
        #expect(server.signal(SIGTERM) == 0)
    }

    /// QR sign-in codes (issue 19, 4): the anonymous creator cannot skip the approval; a locked account
    /// gets no session; the passwordless session registers no device until it re-authenticates.
    @Test(arguments: ServeTests.backends)
    func authenticationCodesNeedApprovalRespectTheLockAndRegisterNoDevice(_ kind: String) async throws {
        let t = try CLI()
        let db = try ServeTests.database(kind, t)
        let server = try ServeTests.Server(database: db, in: t.dir)
        let dana = try await Account("dana", server: server.url)
        let phone = try await dana.pair("phone")
        let screen = CountersignClient(server: URL(string: server.url)!)
        let unapproved = await #expect(throws: ClientError.self) {
            _ = try await screen.createAuthCode(userApproval: "NOT_REQUIRED")
        }
        #expect(
            unapproved?.code == .invalidField && "\(unapproved!)".contains("COUNTERSIGN_AUTH_CODES_WITHOUT_APPROVAL"),
            "\(String(describing: unapproved))"
        )

        // Approved, then wrong passwords elsewhere delay the account (the 3rd; the rest are refused
        // unchecked) before the screen collects.
        let created = try await screen.createAuthCode()
        let claim = try await phone.authenticate(authCode: created.code)
        #expect(claim.status == "CLAIMED" && claim.object.clientContext.address == "127.0.0.1")
        #expect(try await claim.approve(userId: claim.users[0].userId) == "COMPLETED")
        let guesser = CountersignClient(server: URL(string: server.url)!)
        for _ in 0..<5 { _ = try? await guesser.signIn(username: "dana", password: "wrong horse") }
        let locked = await #expect(throws: ClientError.self) { _ = try await screen.completeAuthCodeSignIn(created) }
        #expect(locked?.code == .signInDelayed, "\(String(describing: locked))")
        #expect(try t.cs("admin", "unlock", "dana", "--database", db).status == 0)

        // A session from a code: no device registration, however the account's interval is set.
        let again = try await screen.createAuthCode()
        let second = try await phone.authenticate(authCode: again.code)
        #expect(try await second.approve(userId: second.users[0].userId) == "COMPLETED")
        _ = try await screen.completeAuthCodeSignIn(again)
        let key = Identity.generate()
        let device = await #expect(throws: ClientError.self) {
            _ = try await screen.registerDevice(name: "kiosk", signing: key, encryptionKey: key.publicKey)
        }
        #expect(device?.code == .reauthenticationRequired, "\(String(describing: device))")
        #expect(server.signal(SIGTERM) == 0)
    }

    /// Pairing keys: single use, one answer for wrong and used; an authenticator is not in the
    /// directory; concurrent approvals of one sign-in: exactly one wins; another account's device and a
    /// replayed answer are refused.
    @Test(arguments: ServeTests.backends)
    func refusalsAndRaces(_ kind: String) async throws {
        let t = try CLI()
        let db = try ServeTests.database(kind, t)
        let server = try ServeTests.Server(database: db, in: t.dir)
        let alice = try await Account("alice", server: server.url)
        let mallory = try await Account("mallory", server: server.url)
        let key = try await alice.sdk.createPairingKey()
        let phone = try await CountersignAuthenticator.pair(
            key.key,
            server: URL(string: server.url)!,
            name: "phone",
            identity: Identity.generate()
        ).0
        await #expect(throws: PingOneError.pairingKey, "used") {
            try await CountersignAuthenticator.pair(
                key.key,
                server: URL(string: server.url)!,
                name: "again",
                identity: Identity.generate()
            )
        }
        await #expect(throws: PingOneError.pairingKey, "wrong: the same answer") {
            try await CountersignAuthenticator.pair(
                "ABCD-EFGH-JKMN",
                server: URL(string: server.url)!,
                name: "guess",
                identity: Identity.generate()
            )
        }
        let tablet = try await alice.pair("tablet")
        let evil = try await mallory.pair("evil")
        #expect(
            try await alice.sdk.directory(username: "alice").devices.isEmpty,
            "authenticators are not in the key directory"
        )

        let (browser, pending) = try await alice.pendingSignIn(server: server.url)
        let number = pending.transaction.numberMatching!.number
        let a = try await Self.notification(phone, for: pending)
        let b = try await Self.notification(tablet, for: pending)
        #expect(try await evil.pendingNotifications().isEmpty, "mallory's device got no challenge")
        @Sendable func attempt(_ n: NotificationObject) async -> String {
            do { return try await n.approve(numberMatchingPickedValue: number) } catch { return "refused: \(error)" }
        }
        async let first = attempt(a)
        async let second = attempt(b)
        let results = await [first, second]
        #expect(results.filter { $0 == "COMPLETED" }.count == 1, "exactly one approval wins: \(results)")
        try await browser.completeSignIn(pending)
        await #expect(throws: PingOneError.failedPolicyRequirements, "answered already") {
            try await a.approve(numberMatchingPickedValue: number)
        }

        // Mallory's device answering alice's next sign-in with a copied challenge: not its transaction.
        let (_, p2) = try await alice.pendingSignIn(server: server.url)
        let forPhone = try await Self.notification(phone, for: p2)
        let stolen = NotificationObjectForgery.retarget(forPhone, to: evil)
        await #expect(throws: (any Error).self, "another account's device") {
            try await stolen.approve(numberMatchingPickedValue: p2.transaction.numberMatching!.number)
        }
        #expect(try await alice.sdk.mfaTransaction(p2).status == "PUSH_CONFIRMATION_REQUIRED", "nothing changed")
        #expect(server.signal(SIGTERM) == 0)
    }
}

/// Builds the answer a thief would: the same challenge claims, signed by a device that was not asked.
enum NotificationObjectForgery {
    static func retarget(_ n: NotificationObject, to other: CountersignAuthenticator) -> NotificationObject {
        NotificationObject(authenticator: other, claims: n.claims)
    }
}
