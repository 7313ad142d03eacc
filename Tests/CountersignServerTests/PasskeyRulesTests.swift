import CountersignAPI
import CountersignCrypto
import CountersignTestSupport
import Foundation
import Testing

@testable import CountersignServer

/// docs/PROTOCOL.md §5: each check of a registration and an assertion, refusing what a software
/// authenticator sends when one part is bent.
@Suite(.closesStorage) struct PasskeyRulesTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let rp = RelyingParty(publicURL: URL(string: "https://cs.example:8443/app")!, extraOrigins: ["https://alt.example"])
    let origin = "https://cs.example:8443"
    let handle: [UInt8] = Array(repeating: 7, count: 16)

    func ceremony(_ kind: PasskeyCeremony.Kind, account: String? = "acct", at: Date? = nil) -> PasskeyCeremony {
        PasskeyCeremony.make(kind: kind, accountID: account, boundTo: nil, now: at ?? now, random: SystemRandomSource())
    }

    func register(
        _ auth: SoftAuthenticator,
        _ c: PasskeyCeremony,
        existing: Int = 0,
        at: Date? = nil,
        rpID: String? = nil,
        origin: String? = nil,
        flags: UInt8? = nil,
        packed: Bool = false,
        type: String = "webauthn.create",
        rawID: [UInt8]? = nil,
        boundTo: String? = nil,
        transports: [String] = ["internal"]
    ) throws(PasskeyError) -> StoredPasskey {
        let r = auth.register(
            rpID: rpID ?? rp.id,
            challenge: c.challenge,
            origin: origin ?? self.origin,
            flags: flags,
            packed: packed,
            type: type
        )
        let v = try PasskeyRules.verifyRegistration(
            .init(
                rawID: rawID ?? auth.credentialID,
                clientDataJSON: r.clientDataJSON,
                attestationObject: r.attestationObject,
                transports: transports
            ),
            ceremony: c,
            accountID: "acct",
            boundTo: boundTo,
            existingCount: existing,
            rp: rp,
            now: at ?? now
        )
        return v.stored(id: "pk", accountID: "acct", name: "key", prfSalt: [], at: now)
    }

    func assertion(
        _ auth: inout SoftAuthenticator,
        _ c: PasskeyCeremony,
        stored: StoredPasskey,
        rpID: String? = nil,
        origin: String? = nil,
        flags: UInt8? = nil,
        type: String = "webauthn.get",
        crossOrigin: Bool = false,
        userHandle: [UInt8]? = nil,
        omitHandle: Bool = false,
        kind: PasskeyCeremony.Kind = .signIn,
        boundTo: String? = nil,
        at: Date? = nil,
        tamper: (inout [UInt8]) -> Void = { _ in }
    ) throws(PasskeyError) -> PasskeyRules.Verified {
        let a = auth.assert(
            rpID: rpID ?? rp.id,
            challenge: c.challenge,
            origin: origin ?? self.origin,
            flags: flags,
            type: type,
            crossOrigin: crossOrigin
        )
        var sig = a.signature
        tamper(&sig)
        return try PasskeyRules.verifyAssertion(
            .init(
                rawID: auth.credentialID,
                clientDataJSON: a.clientDataJSON,
                authenticatorData: a.authenticatorData,
                signature: sig,
                userHandle: omitHandle ? nil : (userHandle ?? handle)
            ),
            ceremony: c,
            kind: kind,
            boundTo: boundTo,
            stored: stored,
            userHandle: handle,
            rp: rp,
            now: at ?? now
        )
    }

    /// A passkey's ID goes on command lines, where a leading '-' reads as an option.
    @Test func aNewIDNeverStartsWithADash() {
        for first in UInt8.min...UInt8.max {
            let bytes = [first] + Array(repeating: 0x5A, count: 15)
            let id = PasskeyRules.newID(bytes)
            #expect(!id.hasPrefix("-") && Base64URL(text: id)?.bytes.count == 16, "\(first): \(id)")
            if !(0xF8...0xFB).contains(first) { #expect(id == Base64URL(bytes).text, "\(first): \(id)") }
        }
        #expect(PasskeyRules.newID([0xF8] + Array(repeating: 0, count: 15)).hasPrefix("e"))
    }

    @Test func theRelyingPartyComesFromThePublicURL() {
        #expect(rp.id == "cs.example" && rp.accepts(origin: origin) && rp.accepts(origin: "https://alt.example"))
        #expect(!rp.accepts(origin: "https://cs.example") && !rp.accepts(origin: "http://cs.example:8443"))
        #expect(!rp.accepts(origin: "https://evil.example") && !rp.accepts(origin: "http://localhost:8080"))
        let dev = RelyingParty(publicURL: nil)
        #expect(
            dev.id == "localhost" && dev.accepts(origin: "http://localhost:8080")
                && dev.accepts(origin: "http://localhost")
        )
        #expect(!dev.accepts(origin: "http://127.0.0.1:8080") && !dev.accepts(origin: "http://localhost:8080/x"))
        #expect(
            !dev.accepts(origin: "http://localhost.evil.example") && !dev.accepts(origin: "http://user@localhost:1")
        )
    }

    @Test func aRegistrationAndItsAssertionsPass() throws {
        var auth = SoftAuthenticator()
        let stored = try register(auth, ceremony(.registration))
        #expect(stored.credentialID == auth.credentialID && !stored.backupEligible && stored.signCount == 0)
        #expect(try COSEKey(decoding: stored.publicKey).algorithm == .es256)
        let packed = try register(SoftAuthenticator(), ceremony(.registration), packed: true)
        #expect(!packed.credentialID.isEmpty)
        let v = try assertion(&auth, ceremony(.signIn, account: nil), stored: stored)
        #expect(v == .init(signCount: 1, backedUp: false, userVerified: true))
    }

    @Test func registrationChecksEachPart() throws {
        let auth = SoftAuthenticator()
        let c = ceremony(.registration)
        let cases: [(String, () throws(PasskeyError) -> StoredPasskey, PasskeyError)] = [
            ("expired", { () throws(PasskeyError) in try register(auth, c, at: c.expiresAt) }, .ceremonyNotFound),
            ("another kind", { () throws(PasskeyError) in try register(auth, ceremony(.signIn)) }, .ceremonyNotFound),
            (
                "another account",
                { () throws(PasskeyError) in try register(auth, ceremony(.registration, account: "other")) },
                .ceremonyNotFound
            ),
            (
                "type", { () throws(PasskeyError) in try register(auth, c, type: "webauthn.get") },
                .clientData("type is webauthn.get, not webauthn.create")
            ),
            (
                "origin", { () throws(PasskeyError) in try register(auth, c, origin: "https://evil.example") },
                .clientData("origin https://evil.example is not accepted")
            ),
            (
                "rp id", { () throws(PasskeyError) in try register(auth, c, rpID: "evil.example") },
                .authenticator("the credential is for another RP ID than cs.example")
            ),
            (
                "no UP", { () throws(PasskeyError) in try register(auth, c, flags: 0x04) },
                .authenticator("user presence is not set")
            ),
            (
                "no UV", { () throws(PasskeyError) in try register(auth, c, flags: 0x01) },
                .authenticator("user verification is not set")
            ),
            (
                "raw id", { () throws(PasskeyError) in try register(auth, c, rawID: [1, 2, 3]) },
                .data(.malformed("the credential ID in the authenticator data is not the response's rawId"))
            ),
            ("ten already", { () throws(PasskeyError) in try register(auth, c, existing: 10) }, .tooManyPasskeys),
        ]
        for (name, run, want) in cases {
            #expect(throws: want, "\(name)") { try run() }
        }
        // Another ceremony's challenge.
        let other = ceremony(.registration)
        let r = auth.register(rpID: rp.id, challenge: other.challenge, origin: origin)
        #expect(throws: PasskeyError.clientData("the challenge is not this ceremony's")) {
            try PasskeyRules.verifyRegistration(
                .init(
                    rawID: auth.credentialID,
                    clientDataJSON: r.clientDataJSON,
                    attestationObject: r.attestationObject,
                    transports: []
                ),
                ceremony: c,
                accountID: "acct",
                boundTo: nil,
                existingCount: 0,
                rp: rp,
                now: now
            )
        }
        // Malformed CBOR: a byte cut off the attestation object.
        let good = auth.register(rpID: rp.id, challenge: c.challenge, origin: origin)
        #expect(throws: PasskeyError.self) {
            try PasskeyRules.verifyRegistration(
                .init(
                    rawID: auth.credentialID,
                    clientDataJSON: good.clientDataJSON,
                    attestationObject: Array(good.attestationObject.dropLast()),
                    transports: []
                ),
                ceremony: c,
                accountID: "acct",
                boundTo: nil,
                existingCount: 0,
                rp: rp,
                now: now
            )
        }
    }

    @Test func assertionChecksEachPart() throws {
        var auth = SoftAuthenticator()
        let stored = try register(auth, ceremony(.registration))
        let c = ceremony(.signIn, account: nil)
        #expect(throws: PasskeyError.clientData("type is webauthn.create, not webauthn.get")) {
            try assertion(&auth, c, stored: stored, type: "webauthn.create")
        }
        #expect(throws: PasskeyError.clientData("origin http://localhost is not accepted")) {
            try assertion(&auth, c, stored: stored, origin: "http://localhost")
        }
        #expect(throws: PasskeyError.clientData("a cross-origin request")) {
            try assertion(&auth, c, stored: stored, crossOrigin: true)
        }
        #expect(throws: PasskeyError.authenticator("the credential is for another RP ID than cs.example")) {
            try assertion(&auth, c, stored: stored, rpID: "example")
        }
        #expect(throws: PasskeyError.authenticator("user verification is not set")) {
            try assertion(&auth, c, stored: stored, flags: 0x01)
        }
        #expect(throws: PasskeyError.authenticator("user presence is not set")) {
            try assertion(&auth, c, stored: stored, flags: 0x04)
        }
        #expect(throws: PasskeyError.backupEligibilityChanged) { try assertion(&auth, c, stored: stored, flags: 0x0D) }
        #expect(throws: PasskeyError.unknownCredential) { try assertion(&auth, c, stored: stored, userHandle: [1]) }
        #expect(throws: PasskeyError.data(.badSignature)) {
            try assertion(&auth, c, stored: stored) { $0[$0.count - 1] ^= 1 }
        }
        #expect(throws: PasskeyError.data(.badSignature)) { try assertion(&auth, c, stored: stored) { $0[8] ^= 0x80 } }
        // Another credential's signature under this one's ID.
        var other = SoftAuthenticator(credentialID: auth.credentialID)
        #expect(throws: PasskeyError.data(.badSignature)) { try assertion(&other, c, stored: stored) }
    }

    /// The ceremony is checked by the rules themselves, not left to each route (PROTOCOL §5.3 step 1).
    @Test func anAssertionAnswersOnlyItsOwnLiveCeremony() throws {
        var auth = SoftAuthenticator()
        let stored = try register(auth, ceremony(.registration))
        let signIn = ceremony(.signIn, account: nil)
        #expect(throws: PasskeyError.ceremonyNotFound) {
            try assertion(&auth, signIn, stored: stored, at: signIn.expiresAt)
        }
        #expect(throws: PasskeyError.ceremonyNotFound) {
            try assertion(&auth, signIn, stored: stored, kind: .reauthentication)
        }
        #expect(throws: PasskeyError.ceremonyNotFound) {
            try assertion(&auth, signIn, stored: stored, boundTo: "session")
        }
        // A second-factor ceremony for another account, and one bound to a transaction.
        let other = ceremony(.secondFactor, account: "other")
        #expect(throws: PasskeyError.ceremonyNotFound) {
            try assertion(&auth, other, stored: stored, kind: .secondFactor)
        }
        let bound = PasskeyCeremony.make(
            kind: .secondFactor,
            accountID: "acct",
            boundTo: "tx1",
            now: now,
            random: SystemRandomSource()
        )
        #expect(throws: PasskeyError.ceremonyNotFound) {
            try assertion(&auth, bound, stored: stored, kind: .secondFactor, boundTo: "tx2")
        }
        #expect(try assertion(&auth, bound, stored: stored, kind: .secondFactor, boundTo: "tx1").userVerified)
        // A known account's ceremony may go without the user handle; a discoverable sign-in may not.
        #expect(
            try assertion(&auth, bound, stored: stored, omitHandle: true, kind: .secondFactor, boundTo: "tx1")
                .userVerified
        )
        #expect(throws: PasskeyError.unknownCredential) {
            try assertion(&auth, signIn, stored: stored, omitHandle: true)
        }
    }

    @Test func registrationIsBoundToItsSessionAndTransportsAreNames() throws {
        let auth = SoftAuthenticator()
        let c = PasskeyCeremony.make(
            kind: .registration,
            accountID: "acct",
            boundTo: "s1",
            now: now,
            random: SystemRandomSource()
        )
        #expect(throws: PasskeyError.ceremonyNotFound) { try register(auth, c, boundTo: "s2") }
        #expect(throws: PasskeyError.ceremonyNotFound) { try register(auth, c, boundTo: nil) }
        #expect(
            try register(auth, c, boundTo: "s1", transports: ["usb", "nfc", "hybrid", "smart-card"]).credentialID
                == auth.credentialID
        )
        for bad in [
            Array(repeating: "usb", count: 9), ["USB"], [""], [String(repeating: "a", count: 33)], ["usb\u{0}"],
        ] {
            #expect(throws: PasskeyError.self, "\(bad)") { try register(auth, c, boundTo: "s1", transports: bad) }
        }
    }

    @Test func theSignCountRule() throws {
        var auth = SoftAuthenticator()
        var stored = try register(auth, ceremony(.registration))
        let c = ceremony(.signIn, account: nil)
        // Both zero: nothing is checked (an authenticator without a counter).
        auth.signCount = UInt32.max  // wraps to 0 on the next assertion
        #expect(try assertion(&auth, c, stored: stored).signCount == 0)
        stored.signCount = 5
        auth.signCount = 5
        #expect(try assertion(&auth, c, stored: stored).signCount == 6)
        auth.signCount = 4
        #expect(throws: PasskeyError.counterNotIncreasing(stored: 5, received: 5)) {
            try assertion(&auth, c, stored: stored)
        }
        auth.signCount = 2
        #expect(throws: PasskeyError.counterNotIncreasing(stored: 5, received: 3)) {
            try assertion(&auth, c, stored: stored)
        }
        // A synced (backup-eligible) passkey's count is only recorded.
        var synced = SoftAuthenticator(backupEligible: true)
        var syncedStored = try register(synced, ceremony(.registration))
        #expect(syncedStored.backupEligible && syncedStored.backedUp)
        syncedStored.signCount = 9
        synced.signCount = 3
        #expect(
            try assertion(&synced, c, stored: syncedStored) == .init(signCount: 9, backedUp: true, userVerified: true)
        )
        // BS may change; BE may not.
        #expect(try assertion(&synced, c, stored: syncedStored, flags: 0x0D).backedUp == false)
        #expect(throws: PasskeyError.backupEligibilityChanged) {
            try assertion(&synced, c, stored: syncedStored, flags: 0x05)
        }
    }
}
