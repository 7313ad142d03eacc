import CountersignClient
import CountersignCrypto
import CountersignTestSupport
import Foundation
import Testing

extension CrashSafetyTests {
    /// One passkey registration of the concurrent burst: its account, its authenticator and what it sent.
    struct Registration: Sendable {
        let account: Int
        let name: String
        let authenticator: SoftAuthenticator
        let userHandle: [UInt8]
        let body: [String: any Sendable]

        var credentialID: String { SoftAuthenticator.base64URL(authenticator.credentialID) }

        /// Starts a ceremony for the session `token` and answers it as `authenticator` would.
        init(account: Int, name: String, authenticator: SoftAuthenticator, server: String, token: String) async throws {
            let (status, options) = try await ServeTests.request(
                "POST",
                server + "/v1/me/passkeys/options",
                token: token
            )
            try #require(status == 201, "\(status) \(options)")
            let publicKey = try #require(options["publicKey"] as? [String: Any])
            let challenge = try #require((publicKey["challenge"] as? String).flatMap { Base64URL(text: $0) }).bytes
            let user = try #require(publicKey["user"] as? [String: Any])
            userHandle = try #require((user["id"] as? String).flatMap { Base64URL(text: $0) }).bytes
            let port = try #require(URL(string: server)?.port)
            let made = authenticator.register(
                rpID: "localhost",
                challenge: challenge,
                origin: "http://localhost:\(port)"
            )
            let id = SoftAuthenticator.base64URL(authenticator.credentialID)
            body = [
                "ceremonyId": try #require(options["ceremonyId"] as? String), "name": name,
                "credential": [
                    "id": id, "rawId": id, "type": "public-key",
                    "response": [
                        "clientDataJSON": SoftAuthenticator.base64URL(made.clientDataJSON),
                        "attestationObject": SoftAuthenticator.base64URL(made.attestationObject),
                        "transports": ["internal"],
                    ] as [String: any Sendable],
                ] as [String: any Sendable],
            ]
            self.account = account
            self.name = name
            self.authenticator = authenticator
        }

        /// A discoverable sign-in with this passkey: the session's username, or nil when refused.
        func signIn(server: String) async throws -> String? {
            let (status, options) = try await ServeTests.request("POST", server + "/v1/sessions/passkey/options")
            try #require(status == 201, "\(status) \(options)")
            let publicKey = try #require(options["publicKey"] as? [String: Any])
            let challenge = try #require((publicKey["challenge"] as? String).flatMap { Base64URL(text: $0) }).bytes
            var a = authenticator
            let port = try #require(URL(string: server)?.port)
            let made = a.assert(rpID: "localhost", challenge: challenge, origin: "http://localhost:\(port)")
            let (signedIn, session) = try await ServeTests.request(
                "POST",
                server + "/v1/sessions/passkey",
                json: [
                    "ceremonyId": try #require(options["ceremonyId"] as? String),
                    "credential": [
                        "id": credentialID, "rawId": credentialID, "type": "public-key",
                        "response": [
                            "clientDataJSON": SoftAuthenticator.base64URL(made.clientDataJSON),
                            "authenticatorData": SoftAuthenticator.base64URL(made.authenticatorData),
                            "signature": SoftAuthenticator.base64URL(made.signature),
                            "userHandle": SoftAuthenticator.base64URL(userHandle),
                        ],
                    ] as [String: Any],
                ]
            )
            guard signedIn == 201, let token = session["token"] as? String else { return nil }
            return try await ServeTests.request("GET", server + "/v1/me", token: token).1["username"] as? String
        }
    }

    /// Passkey registrations finished concurrently, killed mid-flight: twelve for one account (two over the
    /// cap of 10) and four for another, two of them with credential IDs of the first's. After the restart
    /// every acknowledged passkey is listed and signs in; every listed one is one that was sent, whole (its
    /// name, credential ID and key: it signs in to its account); no account has more than 10 and no
    /// credential ID is listed twice; and no ceremony whose passkey is listed, or whose answer came back,
    /// can be finished again.
    @Test(arguments: ServeTests.backends)
    func passkeyRegistrationsKilledMidFlightAreWholeOrAbsent(_ kind: String) async throws {
        let t = try CLI()
        let db = try ServeTests.database(kind, t)
        var rng = Self.seeded("passkeys \(kind)")
        var server = try Server(database: db, in: t.dir, environment: Self.roomy)
        let names = ["passkeysa", "passkeysb"]
        var signedIn: [String] = []
        for name in names {
            let sdk = CountersignClient(server: URL(string: server.url)!)
            try await sdk.register(username: name, password: "correct horse", name: "N", lastname: "L")
            try await sdk.signIn(username: name, password: "correct horse")
            signedIn.append(try #require(sdk.token))
        }
        let tokens = signedIn
        var registrations: [Registration] = []
        for i in 0..<12 {
            let a = SoftAuthenticator(backupEligible: Bool.random(using: &rng))
            registrations.append(
                try await Registration(
                    account: 0,
                    name: "a\(i)",
                    authenticator: a,
                    server: server.url,
                    token: tokens[0]
                )
            )
        }
        for i in 0..<4 {
            // Two of the second account's take credential IDs the first account's registrations use.
            let a = SoftAuthenticator(credentialID: i < 2 ? registrations[i * 5].authenticator.credentialID : nil)
            registrations.append(
                try await Registration(
                    account: 1,
                    name: "b\(i)",
                    authenticator: a,
                    server: server.url,
                    token: tokens[1]
                )
            )
        }
        registrations.shuffle(using: &rng)

        let answered = Locked<[Int: (status: Int, id: String?)]>([:])
        let url = server.url
        let burst = registrations.enumerated().map { i, r in
            Task {
                guard
                    let reply = try? await ServeTests.request(
                        "POST",
                        url + "/v1/me/passkeys",
                        json: r.body,
                        token: tokens[r.account]
                    )
                else { return }
                answered.withLock { $0[i] = (reply.0, reply.1["id"] as? String) }
            }
        }
        try await Self.kill(
            server,
            after: Int.random(in: 1...8, using: &rng),
            jitter: .milliseconds(Int.random(in: 0...5, using: &rng))
        ) { answered.withLock { $0.count } }
        for task in burst { await task.value }
        let acked = answered.withLock { $0 }
        print("passkeys \(kind): \(acked.count) of \(registrations.count) answered before the kill")

        server = try Server(database: db, in: t.dir, environment: Self.roomy)
        defer { _ = server.signal(SIGTERM) }
        var listedIDs: [String] = []
        for (a, token) in tokens.enumerated() {
            let (status, list) = try await ServeTests.request("GET", server.url + "/v1/me/passkeys", token: token)
            try #require(status == 200)
            let passkeys = try #require(list["passkeys"] as? [[String: Any]])
            #expect(passkeys.count <= 10, "\(names[a]) has \(passkeys.count) passkeys")
            for p in passkeys {
                let name = p["name"] as? String ?? ""
                let credentialID = p["credentialId"] as? String ?? ""
                listedIDs.append(credentialID)
                guard let i = registrations.firstIndex(where: { $0.account == a && $0.name == name }) else {
                    Issue.record("\(names[a]): a passkey never sent: \(p)")
                    continue
                }
                let r = registrations[i]
                #expect(credentialID == r.credentialID, "\(name): listed whole")
                if let answer = acked[i] {
                    #expect(answer.status == 201 && answer.id == p["id"] as? String, "\(name): refused, yet listed")
                }
                #expect(try await r.signIn(server: server.url) == names[a], "\(name): listed but does not sign in")
                let (replayed, problem) = try await ServeTests.request(
                    "POST",
                    server.url + "/v1/me/passkeys",
                    json: r.body,
                    token: token
                )
                #expect(
                    replayed == 409 && problem["code"] as? String == "passkey-ceremony-invalid",
                    "\(name): its ceremony finished again: \(replayed) \(problem)"
                )
            }
            // Each passkey was stored with its audit row, in one write.
            let (audited, events) = try await ServeTests.request(
                "GET",
                server.url + "/v1/me/audit?limit=100",
                token: token
            )
            let created = (events["events"] as? [[String: Any]] ?? []).filter {
                $0["kind"] as? String == "passkey" && $0["outcome"] as? String == "created"
            }
            #expect(
                audited == 200 && created.count == passkeys.count,
                "\(names[a]): \(created.count) 'passkey created' events for \(passkeys.count) passkeys"
            )
            for (i, r) in registrations.enumerated() where r.account == a && acked[i]?.status == 201 {
                #expect(
                    passkeys.contains { $0["id"] as? String == acked[i]?.id && $0["name"] as? String == r.name },
                    "\(r.name): an acknowledged passkey was lost"
                )
            }
        }
        #expect(Set(listedIDs).count == listedIDs.count, "a credential ID is listed twice")
        // A ceremony answered before the kill, accepted or refused, is spent.
        for (i, r) in registrations.enumerated() where acked[i] != nil {
            let (replayed, problem) = try await ServeTests.request(
                "POST",
                server.url + "/v1/me/passkeys",
                json: r.body,
                token: tokens[r.account]
            )
            #expect(
                replayed == 409 && problem["code"] as? String == "passkey-ceremony-invalid",
                "\(r.name): its ceremony finished again after the restart: \(replayed) \(problem)"
            )
        }
    }
}
