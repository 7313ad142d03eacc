import CountersignAPI
import Crypto
import Foundation
import SQLKit
import Testing

@testable import CountersignServer

/// Issue 33: discoverable sign-in ceremonies are carried by the client under a MAC, so that anonymous
/// starts fill nothing; an answer is still judged once.
@Suite(.closesStorage) struct SignInCeremonyTests {
    static let key = SymmetricKey(data: [UInt8](repeating: 7, count: 32))
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aCarriedCeremonyOpensOnlyAsMadeAndUntilItExpires() throws {
        let random = SystemRandomSource()
        let made = SignInCeremony.make(key: Self.key, now: Self.now, random: random)
        #expect(made.id.hasPrefix("s1.") && made.id.utf8.count <= 64, "ceremony IDs are at most 64 bytes")
        #expect(made.kind == .signIn && made.accountID == nil && made.boundTo == nil && made.challenge.count == 32)
        #expect(SignInCeremony.open(made.id, key: Self.key, now: Self.now) == made)
        #expect(SignInCeremony.open(made.id, key: Self.key, now: made.expiresAt.addingTimeInterval(-0.001)) == made)
        #expect(SignInCeremony.open(made.id, key: Self.key, now: made.expiresAt) == nil, "expired at its expiry")
        #expect(SignInCeremony.open(made.id, key: SymmetricKey(size: .bits256), now: Self.now) == nil, "another key")
        let other = SignInCeremony.make(key: Self.key, now: Self.now, random: random)
        #expect(other.id != made.id && other.challenge != made.challenge)
        // Every bit of the carried bytes is under the MAC (the expiry too: no extending one's own).
        let bytes = try #require(Base64URL(text: String(made.id.dropFirst(3)))).bytes
        for i in bytes.indices {
            var tampered = bytes
            tampered[i] ^= 0x01
            #expect(
                SignInCeremony.open("s1." + Base64URL(tampered).text, key: Self.key, now: Self.now) == nil,
                "byte \(i)"
            )
        }
        for bad in [
            "", "s1.", "s2." + made.id.dropFirst(3), String(made.id.dropLast()), made.id + "A",
            "s1." + Base64URL(Array(bytes.prefix(39))).text, "s1." + Base64URL(bytes + [0]).text, "s1.!!!!",
        ] {
            #expect(SignInCeremony.open(String(bad), key: Self.key, now: Self.now) == nil, "\(bad)")
        }
    }

    /// Twelve thousand anonymous starts from as many addresses (past the old cap of 10,000 open ones)
    /// store nothing, and a start after them is answered like any other, once.
    @Test(arguments: Backend.available)
    func anonymousStartsStoreNothing(_ backend: Backend) async throws {
        let f = try await PasskeyServiceTests.fixture(backend, "carried")
        for i in 0..<12_000 {
            let origin = RequestOrigin(address: "10.\(i >> 16 & 255).\(i >> 8 & 255).\(i & 255)", userAgent: "")
            _ = try await f.service.startSignIn(origin: origin)
        }
        let rows = try await f.h.store.sql.raw("SELECT COUNT(*) AS n FROM passkey_ceremonies").first()?
            .decode(column: "n", as: Int64.self)
        #expect(rows == 0)
        let start = try await f.service.startSignIn(origin: RequestOrigin(address: "192.0.2.9", userAgent: ""))
        #expect(start.publicKey.allowCredentials.isEmpty && start.publicKey.challenge.bytes.count == 32)
        // Answered (even with nonsense): spent, so every later answer to it is 409.
        let answer = PasskeyAssertionFinish(
            ceremonyId: start.ceremonyId,
            credential: PasskeyAssertionResponse(
                rawId: Base64URL([1, 2, 3]),
                response: .init(
                    clientDataJSON: Base64URL([1]),
                    authenticatorData: Base64URL([2]),
                    signature: Base64URL([3]),
                    userHandle: nil
                )
            )
        )
        _ = try await f.service.attempt(answer, kind: .signIn, accountID: nil, boundTo: nil)
        await #expect(throws: PasskeyError.ceremonyNotFound) {
            _ = try await f.service.attempt(answer, kind: .signIn, accountID: nil, boundTo: nil)
        }
        // Security review: no other path may take the record of an answered one (a re-authentication or a
        // registration sent with its ID deleted it, and the captured sign-in could be replayed).
        await #expect(throws: PasskeyError.ceremonyNotFound) {
            _ = try await f.service.attempt(answer, kind: .reauthentication, accountID: "x", boundTo: "y")
        }
        let registration = PasskeyRegistrationFinish(
            ceremonyId: start.ceremonyId,
            name: "x",
            credential: PasskeyRegistrationResponse(
                rawId: Base64URL([1]),
                response: .init(clientDataJSON: Base64URL([1]), attestationObject: Base64URL([2]), transports: nil)
            )
        )
        await #expect(throws: PasskeyError.ceremonyNotFound) {
            _ = try await f.service.finishRegistration(
                f.auth,
                registration,
                origin: RequestOrigin(address: "192.0.2.9", userAgent: "")
            )
        }
        #expect(try await f.h.storage.takeCeremony(id: start.ceremonyId, now: f.h.clock.now()) == nil)
        #expect(try await f.h.storage.ceremony(id: start.ceremonyId, now: f.h.clock.now()) == nil)
        await #expect(throws: PasskeyError.ceremonyNotFound) {
            _ = try await f.service.attempt(answer, kind: .signIn, accountID: nil, boundTo: nil)
        }
        // A carried ceremony is no re-authentication's, and a stored one's ID is no sign-in's.
        let another = try await f.service.startSignIn(origin: RequestOrigin(address: "192.0.2.9", userAgent: ""))
        var wrongKind = answer
        wrongKind.ceremonyId = another.ceremonyId
        await #expect(throws: PasskeyError.ceremonyNotFound) {
            _ = try await f.service.attempt(wrongKind, kind: .reauthentication, accountID: "x", boundTo: "y")
        }
        let rowsAfter = try await f.h.store.sql.raw("SELECT COUNT(*) AS n FROM passkey_ceremonies").first()?
            .decode(column: "n", as: Int64.self)
        #expect(rowsAfter == 1, "only the answered one")
        await f.h.close()
    }
}
