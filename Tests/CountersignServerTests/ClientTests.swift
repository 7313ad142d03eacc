import CountersignClient
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

@testable import CountersignServer

/// The SDK against a live server on a real socket: every call, and the typed errors.
@Suite(.closesStorage) struct ClientTests {
    @Test func everyCallAndItsTypedErrors() async throws {
        let h = try await Harness.make(.sqlite) { $0.captcha = .always }
        let router = try h.router()
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        do {
            try await exercise(app, h)
        } catch {
            await h.close()
            throw error
        }
        await h.close()
    }

    func exercise(_ app: some ApplicationProtocol, _ h: Harness) async throws {
        try await app.test(.live) { client in
            let server = URL(string: "http://127.0.0.1:\(client.port!)")!
            let sdk = CountersignClient(server: server)
            let account = try await sdk.register(
                username: "SwiftUser",
                password: "correct horse",
                name: "Swift",
                lastname: "User"
            )
            #expect(account.username == "swiftuser" && account.settings.reauthIntervalMinutes == 0)
            await #expect(throws: ClientError.notSignedIn) { try await sdk.me() }
            do {
                try await sdk.register(username: "swiftuser", password: "correct horse", name: "S", lastname: "U")
                Issue.record("registered twice")
            } catch let e as ClientError {
                #expect(e.code == .usernameTaken)
            }
            do {
                try await sdk.signIn(username: "swiftuser", password: "wrong password")
                Issue.record("signed in with a wrong password")
            } catch let e as ClientError {
                #expect(e.code == .invalidCredentials)
            }
            let s = try await sdk.signIn(username: "swiftuser", password: "correct horse")
            #expect(s.token == sdk.token && s.expiresAt > h.clock.now())
            #expect(try await sdk.me().username == "swiftuser")
            #expect(try await sdk.updateSettings(AccountSettings(reauthIntervalMinutes: 5)).reauthIntervalMinutes == 5)
            h.clock.advance(6 * 60)
            do {
                try await sdk.changePassword(current: "correct horse", new: "a brand new one")
                Issue.record("no re-authentication asked")
            } catch let e as ClientError {
                #expect(e.code == .reauthenticationRequired)
                if case .problem(let p) = e { #expect(p.intervalMinutes == 5) }
            }
            try await sdk.reauthenticate(password: "correct horse")
            try await sdk.changePassword(current: "correct horse", new: "a brand new one")
            let page = try await sdk.audit(limit: 3)
            #expect(
                page.events.first?.kind == "password-change"
                    && page.events.first?.userAgent.hasPrefix("countersign-swift") == true
            )
            let rest = try await sdk.audit(next: try #require(page.next))
            #expect(!rest.events.isEmpty && rest.events.first!.id < page.events.last!.id)
            try await sdk.signOut()
            #expect(sdk.token == nil)
            let stale = CountersignClient(server: server, token: s.token)
            do {
                _ = try await stale.me()
                Issue.record("signed-out token works")
            } catch let e as ClientError { #expect(e.code == .unauthenticated) }
        }
        let nowhere = CountersignClient(server: URL(string: "http://127.0.0.1:1")!)
        do {
            _ = try await nowhere.captcha()
            Issue.record("reached port 1")
        } catch let e as ClientError {
            if case .transport = e {} else { Issue.record("expected a transport error, got \(e)") }
        }
    }
}

/// Issue 8.2: the SDK never follows a redirect, so a token or password never reaches another origin.
@Suite(.closesStorage) struct ClientRedirectTests {
    @Test func redirectsAreRefusedAndCredentialsStayHome() async throws {
        let seen = Mutex<[String]>([])
        let elsewhere = Router()
        elsewhere.get("v1/me") { request, _ -> Response in
            seen.withLock { $0.append("GET " + (request.headers[.authorization] ?? "no credentials")) }
            return Response(
                status: .ok,
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: "{}"))
            )
        }
        elsewhere.post("v1/sessions") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 10_000)
            seen.withLock { $0.append("POST " + String(buffer: body)) }
            return Response(status: .created)
        }
        let thief = Application(router: elsewhere, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await thief.test(.live) { thiefClient in
            let target = "http://127.0.0.1:\(thiefClient.port!)"
            let redirecting = Router()
            redirecting.get("v1/me") { _, _ in Response(status: .found, headers: [.location: target + "/v1/me"]) }
            redirecting.post("v1/sessions") { _, _ in
                Response(status: .temporaryRedirect, headers: [.location: target + "/v1/sessions"])
            }
            let server = Application(
                router: redirecting,
                configuration: .init(address: .hostname("127.0.0.1", port: 0))
            )
            try await server.test(.live) { client in
                let sdk = CountersignClient(
                    server: URL(string: "http://127.0.0.1:\(client.port!)")!,
                    token: "cs_secret-token"
                )
                do {
                    _ = try await sdk.me()
                    Issue.record("followed a redirect")
                } catch let e as ClientError {
                    #expect(e == .redirected(status: 302, location: target + "/v1/me"))
                    #expect(
                        e.description.contains("302") && e.description.contains(target)
                            && e.description.contains("not followed")
                    )
                }
                do {
                    _ = try await sdk.signIn(username: "victim", password: "hunter2 hunter2")
                    Issue.record("followed a 307 with the password")
                } catch let e as ClientError {
                    #expect(e == .redirected(status: 307, location: target + "/v1/sessions"))
                }
            }
            #expect(seen.withLock { $0 }.isEmpty, "the other origin received nothing: \(seen.withLock { $0 })")
        }
    }
}
