import CountersignTestSupport
import Crypto
import CryptoExtras
import Foundation
import Testing

@testable import CountersignCrypto

/// Authenticator data, COSE keys, attestation objects and client data (docs/SPEC.md §13), built here the
/// way an authenticator builds them, then tampered with.
@Suite struct WebAuthnDataTests {
    static let rpIDHash = Array(SHA256.hash(data: Array("localhost".utf8)))
    static let aaguid: [UInt8] = Array(0..<16)
    static let credentialID: [UInt8] = Array(repeating: 0xAB, count: 32)

    static func coseP256(_ key: P256.Signing.PublicKey, crv: Int64 = 1, alg: Int64 = -7, kty: Int64 = 2) -> CBOR {
        let point = Array(key.x963Representation)
        return TestCBOR.map([
            (.int(1), .int(kty)), (.int(3), .int(alg)), (.int(-1), .int(crv)),
            (.int(-2), .bytes(Array(point[1..<33]))), (.int(-3), .bytes(Array(point[33..<65]))),
        ])
    }

    static func authData(
        flags: UInt8 = 0x45,
        count: UInt32 = 0,
        credentialID: [UInt8] = credentialID,
        cose: [UInt8]? = nil,
        extensions: [UInt8] = []
    ) -> [UInt8] {
        var out = rpIDHash + [flags] + withUnsafeBytes(of: count.bigEndian, Array.init)
        if let cose {
            out += aaguid + [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xFF)] + credentialID + cose
        }
        return out + extensions
    }

    static func clientData(_ type: String = "webauthn.create", challenge: String = "Y2hhbGxlbmdl") -> [UInt8] {
        Array(
            #"{"type":"\#(type)","challenge":"\#(challenge)","origin":"http://localhost:8080","crossOrigin":false}"#
                .utf8
        )
    }

    @Test func aRegistrationWithNoneAttestationParses() throws {
        let key = P256.Signing.PrivateKey()
        let cose = TestCBOR.encode(Self.coseP256(key.publicKey))
        let data = Self.authData(flags: 0x5D, count: 7, cose: cose)
        let object = TestCBOR.encode(
            TestCBOR.map([
                (.text("fmt"), .text("none")), (.text("attStmt"), .map([])), (.text("authData"), .bytes(data)),
            ])
        )
        let parsed = try AttestationObject(decoding: object)
        try parsed.verify(clientDataHash: ClientData(parsing: Self.clientData()).hash)
        #expect(parsed.format == .none)
        let a = parsed.authenticatorData
        #expect(a.rpIDHash == Self.rpIDHash && a.signCount == 7)
        #expect(a.flags.contains([.userPresent, .userVerified, .backupEligible, .backedUp, .attestedCredential]))
        #expect(parsed.credential.credentialID == Self.credentialID && parsed.credential.aaguid == Self.aaguid)
        #expect(parsed.credential.publicKey.algorithm == .es256 && parsed.credential.publicKey.encoded == cose)
    }

    @Test func packedSelfAttestationIsCheckedUnderTheNewKey() throws {
        let key = P256.Signing.PrivateKey()
        let data = Self.authData(cose: TestCBOR.encode(Self.coseP256(key.publicKey)))
        let client = try ClientData(parsing: Self.clientData())
        func object(sig: [UInt8], alg: Int64 = -7, extra: [(CBOR, CBOR)] = [], fmt: String = "packed") -> [UInt8] {
            TestCBOR.encode(
                TestCBOR.map([
                    (.text("fmt"), .text(fmt)),
                    (.text("attStmt"), TestCBOR.map([(.text("alg"), .int(alg)), (.text("sig"), .bytes(sig))] + extra)),
                    (.text("authData"), .bytes(data)),
                ])
            )
        }
        let good = Array(try key.signature(for: data + client.hash).derRepresentation)
        let parsed = try AttestationObject(decoding: object(sig: good))
        #expect(parsed.format == .packedSelf)
        try parsed.verify(clientDataHash: client.hash)
        // Another client data, a flipped bit, another key's signature, a lying alg.
        #expect(throws: WebAuthnError.badSignature) {
            try parsed.verify(clientDataHash: ClientData(parsing: Self.clientData(challenge: "b3RoZXI")).hash)
        }
        var flipped = good
        flipped[flipped.count - 3] ^= 0x04
        #expect(throws: WebAuthnError.badSignature) {
            try AttestationObject(decoding: object(sig: flipped)).verify(clientDataHash: client.hash)
        }
        let other = Array(try P256.Signing.PrivateKey().signature(for: data + client.hash).derRepresentation)
        #expect(throws: WebAuthnError.badSignature) {
            try AttestationObject(decoding: object(sig: other)).verify(clientDataHash: client.hash)
        }
        #expect(throws: WebAuthnError.malformed("the packed statement's alg is not the credential key's")) {
            try AttestationObject(decoding: object(sig: good, alg: -257)).verify(clientDataHash: client.hash)
        }
        // A certificate chain is passed on by some clients although none was asked for: read as none.
        let chained = try AttestationObject(
            decoding: object(sig: other, extra: [(.text("x5c"), .array([.bytes([1])]))])
        )
        #expect(chained.format == .none)
        try chained.verify(clientDataHash: client.hash)
        for x5c: CBOR in [.array([]), .bytes([1]), .array([.text("cert")])] {
            #expect(
                throws: WebAuthnError.malformed("a packed attestation statement's x5c is not an array of certificates")
            ) {
                try AttestationObject(decoding: object(sig: good, extra: [(.text("x5c"), x5c)]))
            }
        }
        #expect(throws: WebAuthnError.unsupportedAttestation("packed ECDAA attestation")) {
            try AttestationObject(decoding: object(sig: good, extra: [(.text("ecdaaKeyId"), .bytes([1]))]))
        }
        #expect(
            throws: WebAuthnError.unsupportedAttestation(
                "format fido-u2f (none and packed self attestation are accepted)"
            )
        ) {
            try AttestationObject(decoding: object(sig: good, fmt: "fido-u2f"))
        }
    }

    @Test func attestationObjectsOfTheWrongShapeAreRefused() throws {
        let key = P256.Signing.PrivateKey()
        let data = Self.authData(cose: TestCBOR.encode(Self.coseP256(key.publicKey)))
        let none: [(CBOR, CBOR)] = [
            (.text("fmt"), .text("none")), (.text("attStmt"), .map([])), (.text("authData"), .bytes(data)),
        ]
        for bad in [
            Array(none.prefix(2)),
            none + [(.text("extra"), .int(1))],
            [none[0], (.text("attStmt"), .map([])), (.text("authData"), .text("x"))],
            [none[0], (.text("attStmt"), TestCBOR.map([(.text("sig"), .bytes([1]))])), none[2]],
            [none[0], none[1], (.text("authData"), .bytes(Self.authData(flags: 0x05)))],
        ] {
            #expect(throws: WebAuthnError.self) { try AttestationObject(decoding: TestCBOR.encode(TestCBOR.map(bad))) }
        }
    }

    @Test func authenticatorDataIsReadStrictly() throws {
        let key = P256.Signing.PrivateKey()
        let cose = TestCBOR.encode(Self.coseP256(key.publicKey))
        // An assertion's: 37 bytes, no credential.
        let assertion = try AuthenticatorData(parsing: Self.authData(flags: 0x05, count: 0x0102_0304))
        #expect(assertion.signCount == 0x0102_0304 && assertion.attested == nil && assertion.extensions == nil)
        // Extensions after the credential.
        let ext = TestCBOR.encode(TestCBOR.map([(.text("credProtect"), .int(2))]))
        let withExt = try AuthenticatorData(parsing: Self.authData(flags: 0xC5, cose: cose, extensions: ext))
        #expect(withExt.extensions?["credProtect"] == .int(2))

        // The reserved flags (0x02, 0x20) are for future use: ignored.
        #expect(
            try AuthenticatorData(parsing: Self.authData(flags: 0x27)).flags.contains([.userPresent, .userVerified])
        )

        let refusals: [([UInt8], String)] = [
            (Array(Self.authData(flags: 0x05).prefix(36)), "at least 37"),
            (Self.authData(flags: 0x05) + [0], "1 bytes after"),
            (Self.authData(flags: 0x15), "not backup eligible"),
            (Self.authData(flags: 0x45), "cut short"),
            (Self.authData(flags: 0x45, credentialID: Array(repeating: 1, count: 15), cose: cose), "15 bytes"),
            (Self.authData(flags: 0x45, credentialID: Array(repeating: 1, count: 1024), cose: cose), "1024 bytes"),
            (Self.authData(flags: 0x45, cose: cose) + [0xF6], "1 bytes after"),
            (Self.authData(flags: 0x45, cose: Array(cose.dropLast())), "past the end"),
            (Self.authData(flags: 0xC5, cose: cose), "past the end"),
            (Self.authData(flags: 0xC5, cose: cose, extensions: [0x80]), "not a map"),
            (Self.authData(flags: 0x85, extensions: ext + [0]), "1 bytes after"),
        ]
        for (bytes, why) in refusals {
            do {
                _ = try AuthenticatorData(parsing: bytes)
                Issue.record("accepted: \(why)")
            } catch {
                #expect("\(error)".contains(why), "\(why): \(error)")
            }
        }
        // Every cut of a registration's data is refused.
        let full = Self.authData(flags: 0xC5, cose: cose, extensions: ext)
        for n in 37..<full.count {
            #expect(throws: WebAuthnError.self) { try AuthenticatorData(parsing: Array(full[0..<n])) }
        }
    }

    @Test func coseKeysOfEachAlgorithmVerifyAndOthersAreRefused() throws {
        let message = Array("authData || clientDataHash".utf8)
        let p256 = P256.Signing.PrivateKey()
        let es = try COSEKey(decoding: TestCBOR.encode(Self.coseP256(p256.publicKey)))
        #expect(es.isValidSignature(Array(try p256.signature(for: message).derRepresentation), for: message))
        #expect(!es.isValidSignature(Array(try p256.signature(for: message).rawRepresentation), for: message))
        #expect(!es.isValidSignature(Array(try p256.signature(for: message).derRepresentation), for: message + [0]))

        // EdDSA is refused: swift-crypto would accept a small-order key (SPEC §13.2).
        let ed = Curve25519.Signing.PrivateKey()
        #expect(throws: WebAuthnError.unsupportedKey("COSE algorithm -8 (ES256 -7 and RS256 -257 are)")) {
            try COSEKey(
                decoding: TestCBOR.encode(
                    TestCBOR.map([
                        (.int(1), .int(1)), (.int(3), .int(-8)), (.int(-1), .int(6)),
                        (.int(-2), .bytes(Array(ed.publicKey.rawRepresentation))),
                    ])
                )
            )
        }

        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let rsaDER = Array(rsa.publicKey.pkcs1DERRepresentation)
        // PKCS#1 RSAPublicKey: SEQUENCE { INTEGER n, INTEGER e }; n is 257 bytes with its sign byte.
        let nStart = rsaDER.firstIndex(of: 0x02)! + 4 + 1
        let n = Array(rsaDER[nStart..<nStart + 256])
        let rsaCOSE = { (n: [UInt8], e: [UInt8]) in
            TestCBOR.encode(
                TestCBOR.map([(.int(1), .int(3)), (.int(3), .int(-257)), (.int(-1), .bytes(n)), (.int(-2), .bytes(e))])
            )
        }
        let rsaKey = try COSEKey(decoding: rsaCOSE(n, [1, 0, 1]))
        let rsaSig = Array(try rsa.signature(for: message, padding: .insecurePKCS1v1_5).rawRepresentation)
        #expect(rsaKey.isValidSignature(rsaSig, for: message))
        #expect(
            !rsaKey.isValidSignature(
                Array(try rsa.signature(for: message, padding: .PSS).rawRepresentation),
                for: message
            )
        )

        let point = Array(p256.publicKey.x963Representation)
        var offCurve = Array(point[33..<65])
        offCurve[31] ^= 1
        let refusals: [([UInt8], WebAuthnError)] = [
            (
                TestCBOR.encode(Self.coseP256(p256.publicKey, crv: 2)),
                .unsupportedKey("an EC2 key on a curve other than P-256")
            ),
            (
                TestCBOR.encode(Self.coseP256(p256.publicKey, alg: -35)),
                .unsupportedKey("COSE algorithm -35 (ES256 -7 and RS256 -257 are)")
            ),
            (
                TestCBOR.encode(Self.coseP256(p256.publicKey, kty: 3)),
                .malformed("COSE key type 3 does not go with algorithm -7")
            ),
            (
                TestCBOR.encode(
                    TestCBOR.map([
                        (.int(1), .int(2)), (.int(3), .int(-7)), (.int(-1), .int(1)),
                        (.int(-2), .bytes(Array(point[1..<33]))), (.int(-3), .bytes(offCurve)),
                    ])
                ),
                .malformed("the P-256 point is not on the curve")
            ),
            (
                TestCBOR.encode(
                    TestCBOR.map([
                        (.int(1), .int(2)), (.int(3), .int(-7)), (.int(-1), .int(1)),
                        (.int(-2), .bytes(Array(point[1..<32]))), (.int(-3), .bytes(Array(point[33..<65]))),
                    ])
                ),
                .malformed("P-256 coordinates are not 32 bytes each")
            ),
            (TestCBOR.encode(TestCBOR.map([(.int(3), .int(-7))])), .malformed("the COSE key has no key type (1)")),
            (TestCBOR.encode(TestCBOR.map([(.int(1), .int(2))])), .malformed("the COSE key has no algorithm (3)")),
            (TestCBOR.encode(.array([])), .malformed("the COSE key is not a map")),
            (
                rsaCOSE(Array(n.prefix(128)), [1, 0, 1]),
                .unsupportedKey("an RSA modulus of 128 bytes (2048 to 4096 bits are accepted)")
            ),
            (
                rsaCOSE([0] + n, [1, 0, 1]),
                .unsupportedKey("an RSA modulus of 257 bytes (2048 to 4096 bits are accepted)")
            ),
            (rsaCOSE(n, [3]), .unsupportedKey("an RSA exponent other than 65537")),
        ]
        for (bytes, error) in refusals {
            #expect(throws: error) { try COSEKey(decoding: bytes) }
        }
    }

    @Test func clientDataIsAnObjectWithTheFieldsAsTheirTypes() throws {
        let c = try ClientData(parsing: Self.clientData("webauthn.get"))
        #expect(c.type == "webauthn.get" && c.challenge == "Y2hhbGxlbmdl" && c.origin == "http://localhost:8080")
        #expect(!c.crossOrigin && c.topOrigin == nil)
        #expect(c.hash == Array(SHA256.hash(data: Self.clientData("webauthn.get"))))
        for bad in [
            "[]", "\"x\"", "{}", #"{"type":"webauthn.get","origin":"o"}"#,
            #"{"type":1,"challenge":"c","origin":"o"}"#,
            #"{"type":"webauthn.get","challenge":"c","origin":"o","crossOrigin":1}"#,
            #"{"type":"webauthn.get","challenge":"c","origin":"o","topOrigin":false}"#,
            #"{"type":"webauthn.get","challenge":"c","origin":"o""#,
            #"{"type":"webauthn.get","challenge":"c","origin":"o","pad":""# + String(repeating: "a", count: 4096)
                + #""}"#,
        ] {
            #expect(throws: WebAuthnError.self, "\(bad.prefix(80))") { try ClientData(parsing: Array(bad.utf8)) }
        }
        #expect(throws: WebAuthnError.self) { try ClientData(parsing: [0x7B, 0xFF, 0x7D]) }
    }

    @Test func anAssertionVerifiesOverAuthenticatorDataAndTheClientDataHash() throws {
        let key = P256.Signing.PrivateKey()
        let cose = try COSEKey(decoding: TestCBOR.encode(Self.coseP256(key.publicKey)))
        let data = try AuthenticatorData(parsing: Self.authData(flags: 0x05, count: 3))
        let client = try ClientData(parsing: Self.clientData("webauthn.get"))
        let sig = Array(try key.signature(for: data.bytes + client.hash).derRepresentation)
        try WebAuthnAssertion.verify(signature: sig, authenticatorData: data, clientData: client, key: cose)
        for i in [0, sig.count / 2, sig.count - 1] {
            var bad = sig
            bad[i] ^= 0x01
            #expect(throws: WebAuthnError.badSignature) {
                try WebAuthnAssertion.verify(signature: bad, authenticatorData: data, clientData: client, key: cose)
            }
        }
        let otherData = try AuthenticatorData(parsing: Self.authData(flags: 0x05, count: 4))
        #expect(throws: WebAuthnError.badSignature) {
            try WebAuthnAssertion.verify(signature: sig, authenticatorData: otherData, clientData: client, key: cose)
        }
    }

    /// Mutated responses from a software authenticator: every parser reads or refuses them without a
    /// crash, and no mutation of the signed bytes or the signature verifies (seeded, bounded: it runs in
    /// every test run).
    @Test func mutatedResponsesAreRefusedAndNeverCrash() throws {
        var rng = SplitMix(seed: 0x5EED_A55E)
        var auth = SoftAuthenticator()
        let challenge = (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let r = auth.register(rpID: "cs.example", challenge: challenge, origin: "https://cs.example", packed: true)
        let object = try AttestationObject(decoding: r.attestationObject)
        let key = object.credential.publicKey
        let a = auth.assert(rpID: "cs.example", challenge: challenge, origin: "https://cs.example")
        let original = (a.authenticatorData, a.clientDataJSON, a.signature)
        #expect(throws: Never.self) {
            try WebAuthnAssertion.verify(
                signature: original.2,
                authenticatorData: try AuthenticatorData(parsing: original.0),
                clientData: try ClientData(parsing: original.1),
                key: key
            )
        }
        var verified = 0
        for _ in 0..<4000 {
            var parts = [original.0, original.1, original.2]
            let which = Int.random(in: 0..<3, using: &rng)
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                let i = Int.random(in: 0..<parts[which].count, using: &rng)
                parts[which][i] ^= UInt8.random(in: 1...255, using: &rng)
            }
            if Bool.random(using: &rng) {
                parts[which] = Array(parts[which].prefix(Int.random(in: 0..<parts[which].count, using: &rng)))
            }
            guard let data = try? AuthenticatorData(parsing: parts[0]), let client = try? ClientData(parsing: parts[1])
            else { continue }
            if (try? WebAuthnAssertion.verify(
                signature: parts[2],
                authenticatorData: data,
                clientData: client,
                key: key
            ))
                != nil
            {
                verified += 1
            }
        }
        #expect(verified == 0, "a mutated assertion verified")
        // The registration's bytes: mutated attestation objects are read or refused, never a crash; a
        // packed self attestation over changed bytes never verifies.
        var attested = 0
        for _ in 0..<4000 {
            var bytes = r.attestationObject
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
            }
            guard let o = try? AttestationObject(decoding: bytes) else { continue }
            if (try? o.verify(clientDataHash: Array(SHA256.hash(data: r.clientDataJSON)))) != nil,
                o.authenticatorData.bytes != object.authenticatorData.bytes
            {
                attested += 1
            }
        }
        #expect(attested == 0, "a packed attestation over changed authenticator data verified")
    }
}
