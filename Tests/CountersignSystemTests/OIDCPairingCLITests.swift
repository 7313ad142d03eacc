import CountersignClient
import CountersignCrypto
import CountersignTestSupport
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// PingOne's pairing by OpenID Connect end to end (docs/PROTOCOL.md §6.11) against a real `countersign serve`
/// whose public URL is its issuer: `countersign authenticator pair --oidc` as a native app (loopback redirect,
/// PKCE), the browser's part played as the web client plays it, and the paired authenticator then approving a
/// sign-in; and the SDK's `processIdToken` refusing what is not its own, against the server's real JWKS.
@Suite struct OIDCPairingCLITests {
    typealias Dir = MFACLITests.Dir

    /// A server on a known port with `--public-url` at it, a public client `authapp` for loopback redirects,
    /// and alice registered and signed in (directory `alice`).
    static func setUp() throws -> (CLI, ServeTests.Server, String) {
        let t = try CLI()
        let port = PushTests.freePort()
        let issuer = "http://127.0.0.1:\(port)"
        let db = "sqlite:" + t.path("cs.sqlite")
        let server = try ServeTests.Server(database: db, in: t.dir, port: port, arguments: ["--public-url", issuer])
        let add = try t.cs(
            "admin",
            "oidc-client",
            "add",
            "authapp",
            "--name",
            "Countersign CLI",
            "--redirect-uri",
            "http://127.0.0.1/callback",
            "--public",
            "--policy",
            "password",
            "--pairing",
            "yes",
            "--database",
            db
        )
        try #require(add.status == 0, "\(add.stderr)")
        _ = try MFACLITests.registerAlice(t, server)
        return (t, server, issuer)
    }

    /// What the web client's `/oauth2/authorize` page does for a signed-in browser that allows the app: the
    /// query sent to `POST /v1/oidc/authorizations` with its session, then the browser sent to the answer.
    static func browse(
        _ url: String,
        issuer: String,
        session: String,
        consent: Bool = true
    ) async throws -> (status: Int, body: String) {
        let items = URLComponents(string: url)?.queryItems ?? []
        var request = URLRequest(url: URL(string: issuer + "/v1/oidc/authorizations")!)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer \(session)", forHTTPHeaderField: "Authorization")
        request.httpBody = try JSONSerialization.data(withJSONObject: [
            "parameters": items.map { [$0.name, $0.value ?? ""] }, "consent": consent,
        ])
        let (data, _) = try await URLSession.shared.data(for: request)
        let answer = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let location = try #require(answer["location"] as? String, "\(answer)")
        let (page, response) = try await URLSession.shared.data(from: URL(string: location)!)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: page, as: UTF8.self))
    }

    @Test func theCLIPairsByOpenIDConnectAndTheAuthenticatorApprovesASignIn() async throws {
        let (t, server, issuer) = try Self.setUp()
        defer { _ = server.signal(SIGTERM) }
        let browser = CountersignClient(server: URL(string: issuer)!)
        try await browser.signIn(username: "alice", password: "correct horse")
        let session = try #require(browser.token)

        // Not at a terminal and no --yes: refused before anything starts.
        let phone = Dir(t: t, name: "phone")
        let unsure = try phone.cs(
            "authenticator",
            "pair",
            "--oidc",
            issuer,
            "--client-id",
            "authapp",
            "--name",
            "phone",
            "--no-passphrase"
        )
        #expect(unsure.status != 0 && unsure.stderr.contains("pass --yes"), "\(unsure.stderr)")
        #expect(!FileManager.default.fileExists(atPath: phone.file("authenticator.json")))

        // "Don't allow" in the browser: the page says nothing was paired (it is answered before the CLI exits).
        let refusing = try MFACLITests.Running(
            phone,
            [
                "authenticator", "pair", "--oidc", issuer, "--client-id", "authapp", "--name", "phone",
                "--no-passphrase",
            ],
            terminal: true
        )
        let refusedURL = try refusing.wait(for: "^(http://127\\.0\\.0\\.1:[0-9]+/oauth2/authorize\\?[^\\r]*)\\r?$")
        let denied = try await Self.browse(refusedURL, issuer: issuer, session: session, consent: false)
        #expect(denied.status == 200 && denied.body.contains("nothing was paired (access_denied)"), "\(denied)")
        let refusedRun = refusing.finish()
        #expect(refusedRun.status != 0 && refusedRun.stdout.contains("access_denied"), "\(refusedRun)")

        // At a terminal, answered no: the grant is declined and nothing is kept.
        let declining = try MFACLITests.Running(
            phone,
            [
                "authenticator", "pair", "--oidc", issuer, "--client-id", "authapp", "--name", "phone",
                "--no-passphrase",
            ],
            terminal: true
        )
        let firstURL = try declining.wait(for: "^(http://127\\.0\\.0\\.1:[0-9]+/oauth2/authorize\\?[^\\r]*)\\r?$")
        #expect(firstURL.contains("mobilePayload=") && firstURL.contains("code_challenge_method=S256"))
        let back = try await Self.browse(firstURL, issuer: issuer, session: session)
        #expect(back.status == 200 && back.body.contains("You may close this tab"), "\(back)")
        _ = try declining.wait(for: "of alice on \(issuer).*Type yes to pair")
        declining.type("no")
        let declined = declining.finish()
        #expect(declined.status != 0, "\(declined)")
        #expect(declined.stdout.contains("declined") || declined.stderr.contains("declined"), "\(declined)")
        #expect(!FileManager.default.fileExists(atPath: phone.file("authenticator.json")))
        // The key is written only once the pairing is confirmed.
        let keys = (try? FileManager.default.contentsOfDirectory(atPath: phone.file("keys"))) ?? []
        #expect(keys.isEmpty, "\(keys)")

        let pairing = try MFACLITests.Running(
            phone,
            [
                "authenticator", "pair", "--oidc", issuer, "--client-id", "authapp", "--name", "phone",
                "--no-passphrase", "--yes",
            ]
        )
        let url = try pairing.wait(for: "^(http://127\\.0\\.0\\.1:[0-9]+/oauth2/authorize\\?.*)$")
        _ = try await Self.browse(url, issuer: issuer, session: session)
        let paired = pairing.finish()
        #expect(paired.status == 0, "\(paired)")
        #expect(paired.stdout.contains("push: COMPLETED") && paired.stdout.contains("username: alice"), "\(paired)")
        #expect(paired.stderr.contains("paired authenticator"), "\(paired.stderr)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: phone.file("keys"))) ?? []).count == 1)

        // It approves a sign-in like any paired authenticator.
        let laptop = Dir(t: t, name: "laptop")
        let login = try MFACLITests.login(laptop, server)
        let number = try login.wait(for: "^Number to match: ([0-9]+)$")
        let id = try #require(MFACLITests.pending(phone).first?["id"] as? String)
        let approved = try phone.cs("authenticator", "approve", id, "--number", number)
        #expect(approved.status == 0 && approved.text == "COMPLETED\n", "\(approved.text) \(approved.stderr)")
        #expect(login.finish().status == 0)
    }

    @Test func processIdTokenRefusesAnotherAudienceNonceOrPayloadAndDenySpendsTheGrant() async throws {
        let (t, server, issuer) = try Self.setUp()
        defer { _ = server.signal(SIGTERM) }
        _ = t
        let browser = CountersignClient(server: URL(string: issuer)!)
        try await browser.signIn(username: "alice", password: "correct horse")
        let session = try #require(browser.token)

        // The issuer must be exact.
        await #expect(throws: OIDCPairingError.self) { try await OIDCProvider.discover(issuer + "/other") }
        let provider = try await OIDCProvider.discover(issuer + "/")
        #expect(provider.issuer == issuer)

        let identity = Identity.generate()
        let payload = try CountersignAuthenticator.generateMobilePayload(
            identity: identity,
            issuer: issuer,
            clientID: "authapp"
        )
        let flow = try await OIDCNativeAuthorization.start(
            provider: provider,
            clientID: "authapp",
            extra: ["mobilePayload": payload]
        )
        async let tokens = flow.tokens(timeout: Duration.seconds(60))
        _ = try await Self.browse(flow.url.absoluteString, issuer: issuer, session: session)
        let idToken = try #require(try await tokens.id_token)

        func process(
            clientID: String = "authapp",
            nonce: String? = nil,
            payload: String = payload,
            identity: Identity = identity,
            token: String = idToken
        ) async throws -> PairingObject {
            try await CountersignAuthenticator.processIdToken(
                token,
                provider: provider,
                clientID: clientID,
                nonce: nonce ?? flow.nonce,
                payload: payload,
                identity: identity,
                name: "phone"
            )
        }
        await #expect(throws: OIDCPairingError.self) { try await process(clientID: "otherapp") }
        await #expect(throws: OIDCPairingError.self) { try await process(nonce: "not-this-request") }
        let other = Identity.generate()
        await #expect(throws: OIDCPairingError.otherPayload) {
            try await process(
                payload: try CountersignAuthenticator.generateMobilePayload(
                    identity: other,
                    issuer: issuer,
                    clientID: "authapp"
                )
            )
        }
        await #expect(throws: OIDCPairingError.otherPayload) { try await process(identity: other) }
        // A token whose signature does not verify (its payload altered).
        let parts = idToken.split(separator: ".").map(String.init)
        let body = try #require(Base64URL(text: parts[1]))
        var claims = try #require(try JSONSerialization.jsonObject(with: Data(body.bytes)) as? [String: Any])
        claims["aud"] = "otherapp"
        let forged = [parts[0], Base64URL(Array(try JSONSerialization.data(withJSONObject: claims))).text, parts[2]]
            .joined(separator: ".")
        await #expect(throws: OIDCPairingError.self) { try await process(clientID: "otherapp", token: forged) }
        // alg none is never accepted.
        let none = [
            Base64URL(Array(#"{"alg":"none","typ":"JWT"}"#.utf8)).text, parts[1], "",
        ].joined(separator: ".")
        await #expect(throws: OIDCPairingError.self) { try await process(token: none) }

        let object = try await process()
        #expect(object.username == "alice" && object.server.absoluteString == issuer)
        #expect(object.fingerprint == identity.publicKey.fingerprint.description)
        try await object.deny()
        await #expect(throws: PingOneError.pairingKey) { _ = try await object.approve() }
    }
}
