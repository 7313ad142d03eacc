import CountersignAPI
import CountersignTestSupport
import Crypto
import Foundation
import Testing

@testable import CountersignServer

/// Registering passkeys through the service, on both backends: the options a browser gets, one answer
/// per ceremony, the session the ceremony belongs to, recent authentication, names, the limit of ten.
@Suite(.closesStorage) struct PasskeyServiceTests {
    struct Fixture {
        let h: Harness
        let service: PasskeyService
        let auth: Authenticated
        let origin = "https://cs.example"
    }

    static func fixture(_ backend: Backend, _ username: String) async throws -> Fixture {
        let h = try await Harness.make(backend)
        let id = try await PasskeyStoreTests.account(h, username)
        let account = try #require(try await h.storage.account(id: id))
        let now = h.clock.now()
        let session = SessionRecord(
            tokenHash: "session-\(username)",
            accountID: id,
            createdAt: now,
            lastUsedAt: now,
            authenticatedAt: now,
            expiresAt: now.addingTimeInterval(3600),
            address: "192.0.2.1",
            userAgent: "t"
        )
        let service = PasskeyService(
            store: h.storage,
            accounts: h.service,
            sessions: h.services.sessions,
            signIn: h.signIn,
            audit: h.service.audit,
            rp: RelyingParty(publicURL: URL(string: "https://cs.example")!),
            clock: h.clock,
            random: SystemRandomSource(),
            signInKey: SymmetricKey(size: .bits256)
        )
        return Fixture(h: h, service: service, auth: Authenticated(session: session, account: account))
    }

    func finish(
        _ f: Fixture,
        _ start: PasskeyRegistrationStart,
        _ auth: SoftAuthenticator,
        name: String = "Phone",
        as who: Authenticated? = nil
    ) async throws -> PasskeySummary {
        let r = auth.register(rpID: start.publicKey.rp.id, challenge: start.publicKey.challenge.bytes, origin: f.origin)
        return try await f.service.finishRegistration(
            who ?? f.auth,
            PasskeyRegistrationFinish(
                ceremonyId: start.ceremonyId,
                name: name,
                credential: .init(
                    rawId: Base64URL(auth.credentialID),
                    response: .init(
                        clientDataJSON: Base64URL(r.clientDataJSON),
                        attestationObject: Base64URL(r.attestationObject),
                        transports: ["internal"]
                    )
                )
            ),
            origin: RequestOrigin(address: "192.0.2.1", userAgent: "t")
        )
    }

    @Test(arguments: Backend.available)
    func theOptionsAreWebAuthnsAndTheHandleIsStable(_ backend: Backend) async throws {
        let f = try await Self.fixture(backend, "pkopts")
        let a = try await f.service.startRegistration(f.auth)
        let b = try await f.service.startRegistration(f.auth)
        let o = a.publicKey
        #expect(o.rp.id == "cs.example" && o.rp.name == "Countersign")
        #expect(o.user.id.bytes.count == 16 && o.user.id == b.publicKey.user.id && o.user.name == "pkopts")
        #expect(o.challenge.bytes.count == 32 && o.challenge != b.publicKey.challenge && a.ceremonyId != b.ceremonyId)
        #expect(
            o.pubKeyCredParams.map(\.alg) == [-7, -257] && o.pubKeyCredParams.allSatisfy { $0.type == "public-key" }
        )
        let selection = o.authenticatorSelection
        #expect(
            selection.residentKey == "required" && selection.requireResidentKey
                && selection.userVerification == "required"
        )
        #expect(o.attestation == "none" && o.timeout == 300_000 && o.excludeCredentials.isEmpty)
        // The JSON a browser parses: WebAuthn's names, base64url bytes.
        let json = try #require(try JSONSerialization.jsonObject(with: APICoding.encoder().encode(a)) as? [String: Any])
        let publicKey = try #require(json["publicKey"] as? [String: Any])
        #expect(publicKey["challenge"] as? String == o.challenge.text)
        #expect((publicKey["user"] as? [String: Any])?["id"] as? String == o.user.id.text)
        // A registered passkey is excluded from the next registration.
        let auth = SoftAuthenticator()
        // Creation asks only whether the passkey has a PRF (issue 33: an output at the gate's salt would
        // travel in the answer); the salt the key gate will use is made here and kept with the passkey.
        #expect(o.extensions?.prf == PasskeyPRFInputs() && o.extensions?.prf?.eval == nil)
        let added = try await finish(f, a, auth)
        let listed = try await f.service.list(f.auth)
        #expect(added.prfSalt.bytes.count == 32 && listed.map(\.prfSalt) == [added.prfSalt])
        // The summary names its credential, so a salt pairs with the credential it belongs to.
        #expect(
            added.credentialId.bytes == auth.credentialID && listed.map(\.credentialId.bytes) == [auth.credentialID]
        )
        let c = try await f.service.startRegistration(f.auth)
        #expect(c.publicKey.excludeCredentials.map(\.id.bytes) == [auth.credentialID])
        await f.h.close()
    }

    @Test(arguments: Backend.available)
    func aCeremonyIsAnsweredOnceByItsOwnSession(_ backend: Backend) async throws {
        let f = try await Self.fixture(backend, "pkonce")
        let start = try await f.service.startRegistration(f.auth)
        let auth = SoftAuthenticator()
        let summary = try await finish(f, start, auth)
        #expect(summary.name == "Phone" && !summary.synced && summary.aaguid == "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa")
        #expect(try await f.service.list(f.auth) == [summary])
        // The same answer again: the ceremony is gone.
        await #expect(throws: PasskeyError.ceremonyNotFound) { try await finish(f, start, auth) }
        // The same credential in a new ceremony: taken.
        await #expect(throws: PasskeyError.credentialTaken) {
            try await finish(f, try await f.service.startRegistration(f.auth), auth)
        }
        // Another session of the same account answering this session's ceremony: refused, and spent.
        var other = f.auth
        other.session.tokenHash = "another-session"
        let mine = try await f.service.startRegistration(f.auth)
        await #expect(throws: PasskeyError.ceremonyNotFound) {
            try await finish(f, mine, SoftAuthenticator(), as: other)
        }
        await #expect(throws: PasskeyError.ceremonyNotFound) { try await finish(f, mine, SoftAuthenticator()) }
        #expect(try await f.service.list(f.auth).count == 1)
        // The refused answers whose ceremony existed are audited: the taken credential, the other session.
        let events = try await f.h.storage.auditEvents(accountID: f.auth.account.id, before: nil, limit: 20)
        #expect(events.filter { $0.kind == "passkey" && $0.outcome == "refused" }.count == 2)
        await f.h.close()
    }

    @Test(arguments: Backend.available)
    func recentAuthenticationNamesAndTheLimit(_ backend: Backend) async throws {
        let f = try await Self.fixture(backend, "pklimit")
        var stale = f.auth
        stale.session.authenticatedAt = f.h.clock.now().addingTimeInterval(-11 * 60)
        await #expect(throws: SessionError.self) { try await f.service.startRegistration(stale) }
        let start = try await f.service.startRegistration(f.auth)
        await #expect(throws: SessionError.self) { try await finish(f, start, SoftAuthenticator(), as: stale) }
        for bad in ["", "   ", String(repeating: "x", count: 65), "tab\there", "nul\u{0}"] {
            await #expect(throws: PasskeyError.invalidName, "\(bad.debugDescription)") {
                try await finish(f, try await f.service.startRegistration(f.auth), SoftAuthenticator(), name: bad)
            }
        }
        for i in 0..<10 {
            _ = try await finish(
                f,
                try await f.service.startRegistration(f.auth),
                SoftAuthenticator(),
                name: " Key \(i) "
            )
        }
        // The clock stands still here, so all ten share a creation time: compare as a set.
        #expect(Set(try await f.service.list(f.auth).map(\.name)) == Set((0..<10).map { "Key \($0)" }))
        await #expect(throws: PasskeyError.tooManyPasskeys) { try await f.service.startRegistration(f.auth) }
        await f.h.close()
    }
}
