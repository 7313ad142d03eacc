import CountersignAPI
import CountersignClient
import CountersignCrypto
import Crypto
import Foundation
import Synchronization
import Testing

@testable import CountersignServer

/// The SDK's side of APNs (docs/PROTOCOL.md §2.3; PingOne's `setDeviceToken`, `processRemoteNotification`): a
/// push the server sent is turned into the sign-in request it names, fetched and verified over the
/// authenticator's session, and approved; a message push into the queued message; a push Countersign did not
/// send is PingOne's 10002.
@Suite(.closesStorage) struct RemoteNotificationTests {
    static func settings() throws -> APNsSettings {
        try APNsSettings(
            keyPEM: P256.Signing.PrivateKey().pemRepresentation,
            keyID: "ABCDE12345",
            teamID: "TEAM123456",
            topic: "com.example.countersign"
        )
    }

    /// The `userInfo` an app would get for the last push posted to `token`.
    static func userInfo(
        _ posted: borrowing Mutex<[APNsSender.Request]>,
        token: String
    ) async throws -> [AnyHashable: Any] {
        for _ in 0..<200 {
            if let r = posted.withLock({ $0.last { $0.url.lastPathComponent == token } }) {
                return try #require(try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw CancellationError()
    }

    @Test(arguments: Backend.available)
    func aPushBecomesTheVerifiedRequestItNamesAndAForgedOneIsRefused(_ backend: Backend) async throws {
        let posted = Mutex<[APNsSender.Request]>([])
        let configured = try Self.settings()
        try await withLiveServer(
            backend,
            configure: { $0.apns = configured },
            apnsTransport: { request in
                posted.withLock { $0.append(request) }
                return .init(status: 200)
            }
        ) { server, h in
            // The SDK's authenticator signs its answer with the real clock.
            h.clock.advance(Date().timeIntervalSince(h.clock.now()))
            let person = try await Person.make("paloma", server: server)
            let phone = try await person.pairAuthenticator(server: server)
            let token = String(repeating: "ab", count: 32)
            let info = try await phone.setDeviceToken(Data(Hex.decode(token)!), type: .sandbox)
            #expect(info.channel == "apns" && info.environment == "sandbox")

            let browser = CountersignClient(server: server)
            let pending: MFARequired
            do {
                _ = try await browser.signIn(username: "paloma", password: "correct horse")
                Issue.record("a password alone gave a session")
                return
            } catch ClientError.secondFactorRequired(let p) {
                pending = p
            }
            let userInfo = try await Self.userInfo(posted, token: token)
            let request = try #require(posted.withLock { $0.last })
            #expect(request.environment == "sandbox")
            let headers = Dictionary(request.headers, uniquingKeysWith: { a, _ in a })
            #expect(headers["apns-priority"] == "10" && headers["apns-push-type"] == "alert")
            #expect(headers["apns-collapse-id"]?.count == 32)
            let expiration = try #require(Int(headers["apns-expiration"] ?? ""))
            #expect(expiration == Int(pending.transaction.expiresAt.timeIntervalSince1970))
            // What Apple reads: keys and ids, no username, no address, no number.
            let text = String(decoding: request.body, as: UTF8.self)
            #expect(!text.contains("paloma") && !text.contains("127.0.0.1"))

            let n = try await phone.processRemoteNotification(userInfo)
            #expect(n.transactionID == pending.transaction.id && n.username == "paloma")
            #expect(n.numberMatchingType == pending.transaction.numberMatching?.type)
            #expect(
                try await n.approve(numberMatchingPickedValue: pending.transaction.numberMatching?.number)
                    == "COMPLETED"
            )
            // Answered: the same push again finds nothing waiting.
            await #expect(throws: PingOneError.pushConfirmationTimeout) {
                _ = try await phone.processRemoteNotification(userInfo)
            }

            // Not Countersign's, or another authenticator's: 10002, nothing fetched as if it were.
            let forgeries: [[AnyHashable: Any]] = [
                [:], ["aps": ["alert": "hi"]], ["countersign": "approval"],
                ["countersign": ["kind": "approval", "id": pending.transaction.id, "device": "someone-else"]],
                ["countersign": ["kind": "approval", "id": String(repeating: "x", count: 200), "device": "d"]],
                ["countersign": ["kind": "message", "id": "abc"]],
            ]
            for (i, forged) in forgeries.enumerated() {
                do {
                    _ = try await phone.processRemoteNotification(forged)
                    Issue.record("forgery \(i) was taken")
                } catch let e as PingOneError {
                    #expect(e == .unrecognizedRemoteNotification, "forgery \(i)")
                }
            }
            // A message push, for a messaging device: the queued message it names.
            let sender = try await Person.make("sid", server: server)
            let messageToken = String(repeating: "cd", count: 32)
            try await person.sdk.setDeviceToken(Data(Hex.decode(messageToken)!), type: .production)
            let sent = try await sender.send("for your eyes", to: ["paloma"])
            let messageInfo = try await Self.userInfo(posted, token: messageToken)
            let message = try await person.sdk.processRemoteNotification(messageInfo)
            #expect(message?.id == sent.id && message?.from == "sid")
            await #expect(throws: PingOneError.unrecognizedRemoteNotification) {
                _ = try await person.sdk.processRemoteNotification(userInfo)
            }
            let categories = NotificationCategory.all
            #expect(categories.map(\.identifier) == ["APPROVE_AND_OPEN_APP", "MESSAGE"])
            #expect(NotificationCategory.all[0].actions.map(\.opensApp) == [true, false])
        }
    }
}

/// PingOne's errors say their number and name (the catch-all once recursed into itself until the stack ran out).
@Test func everyPingOneErrorSaysItsNumberAndName() {
    for raw in 10000...10020 {
        let e = PingOneError(rawValue: raw)
        #expect(e?.description.hasPrefix("\(raw) ") == true, "\(raw)")
    }
    #expect(PingOneError.bundleId.description == "10006 bundleId")
    #expect(PingOneError.authCanceled.description == "10020 authCanceled")
}
