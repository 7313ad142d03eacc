import Crypto
import Foundation
import Testing

@testable import CountersignCrypto

@Suite struct KeyTests {
    @Test func spkiRoundTripAndFingerprint() throws {
        var rng = SeededRandom(seed: "keys")
        let id = Identity.generate(using: &rng)
        let pem = id.publicKey.pem(.spki)
        #expect(pem.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
        let back = try PublicKey(pem: pem)
        #expect(back == id.publicKey)
        // Fingerprint = SHA-256(SPKI DER)[0..16], in four groups.
        let expected = Array(SHA256.hash(data: id.publicKey.spkiDER).prefix(16))
        #expect(back.fingerprint.bytes == expected)
        #expect(back.fingerprint.description.split(separator: ":").map(\.count) == [8, 8, 8, 8])
        // swift-crypto produces the same SPKI DER as we do.
        #expect(
            try Array(P256.KeyAgreement.PublicKey(x963Representation: id.publicKey.point).derRepresentation)
                == id.publicKey.spkiDER
        )
    }

    @Test func fileLockPEMIsRawPointWithCRLF() throws {
        var rng = SeededRandom(seed: "filelock pem")
        let key = Identity.generate(using: &rng).publicKey
        let pem = key.pem(.filelock)
        let lines = pem.components(separatedBy: "\r\n")
        #expect(lines.first == "-----BEGIN PUBLIC KEY-----")
        #expect(lines[1].count == 64 && lines[2].count == 24)
        #expect(lines[3] == "-----END PUBLIC KEY-----" && lines[4] == "")
        #expect(!pem.replacingOccurrences(of: "\r\n", with: "").contains("\n"))
        #expect(Data(base64Encoded: lines[1] + lines[2]).map(Array.init) == key.point)
        let back = try PublicKey(pem: pem)
        #expect(back == key && back.fingerprint == key.fingerprint)
    }

    @Test func acceptsOpenSSLKeys() throws {
        let pub = try PublicKey(pem: Fixtures.text("keys/openssl-p256.pub.pem"))
        let compressed = try PublicKey(pem: Fixtures.text("keys/openssl-p256-compressed.pub.pem"))
        #expect(pub == compressed)
        let plain = try Identity(pem: Fixtures.text("keys/openssl-p256.key.pem")) {
            Issue.record("no passphrase expected")
            return []
        }
        #expect(plain.publicKey == pub)
        let sec1 = try Identity(pem: Fixtures.text("keys/openssl-p256-sec1.key.pem")) { [] }
        #expect(sec1.publicKey == pub)
        for name in ["pbkdf2", "scrypt"] {
            let id = try Identity(pem: Fixtures.text("keys/openssl-p256-\(name).key.pem")) { Array("hunter22".utf8) }
            #expect(id.publicKey == pub, "\(name)")
            #expect(throws: KeyError.wrongPassphrase, "\(name)") {
                try Identity(pem: Fixtures.text("keys/openssl-p256-\(name).key.pem")) { Array("hunter23".utf8) }
            }
        }
    }

    @Test(arguments: [
        ("p384.pub.pem", "a P-384 key"), ("rsa1024.pub.pem", "an RSA key"),
        ("ed25519.pub.pem", "an Ed25519 key"), ("x25519.pub.pem", "an X25519 key"),
    ])
    func refusesOtherKeyTypesByName(file: String, name: String) throws {
        #expect(throws: KeyError.wrongKeyType(name)) { try PublicKey(pem: Fixtures.text("keys/\(file)")) }
    }

    @Test func refusesRSAPrivateKeyAndLegacyEncryption() throws {
        #expect(throws: KeyError.wrongKeyType("an RSA key")) {
            try Identity(pem: Fixtures.text("keys/rsa1024.key.pem")) { [] }
        }
        #expect(throws: KeyError.self) {
            try Identity(pem: Fixtures.text("keys/openssl-p256-3des.key.pem")) { Array("hunter22".utf8) }
        }
        do {
            _ = try Identity(pem: Fixtures.text("keys/openssl-p256-3des.key.pem")) { Array("hunter22".utf8) }
        } catch let KeyError.unsupportedEncryption(why) {
            #expect(why.contains("PBES2"))
        }
    }

    @Test func encryptedPKCS8RoundTripAndWrongPassphrase() throws {
        var rng = SeededRandom(seed: "pkcs8")
        let id = Identity.generate(using: &rng)
        let pem = try id.pem(passphrase: Array("correct horse".utf8), using: &rng)
        #expect(pem.hasPrefix("-----BEGIN ENCRYPTED PRIVATE KEY-----"))
        #expect(Identity.isEncrypted(pem: pem))
        let back = try Identity(pem: pem) { Array("correct horse".utf8) }
        #expect(back.publicKey == id.publicKey)
        #expect(throws: KeyError.wrongPassphrase) { try Identity(pem: pem) { Array("correct horsf".utf8) } }
        #expect(throws: KeyError.passphraseRequired) { try Identity(pem: pem) { throw KeyError.passphraseRequired } }
        let plain = try id.pem(passphrase: nil, using: &rng)
        #expect(try Identity(pem: plain) { [] }.publicKey == id.publicKey)
    }

    @Test func refusesHostileKDFParameters() throws {
        // scrypt with N = 2^30 would take gigabytes; refused before any work.
        let kdf = DER.sequence(
            DER.encode(DER.oid, OID.scrypt),
            DER.sequence(DER.encode(DER.octetString, [1, 2, 3]), DER.integer(1 << 30), DER.integer(8), DER.integer(1))
        )
        let scheme = DER.sequence(
            DER.encode(DER.oid, OID.aes256CBC),
            DER.encode(DER.octetString, [UInt8](repeating: 0, count: 16))
        )
        let der = DER.sequence(
            DER.sequence(DER.encode(DER.oid, OID.pbes2), DER.sequence(kdf, scheme)),
            DER.encode(DER.octetString, [UInt8](repeating: 0, count: 32))
        )
        let pem = PEM(label: "ENCRYPTED PRIVATE KEY", der: der).text
        #expect(
            throws: KeyError.unsupportedEncryption(
                "scrypt parameters N=1073741824 r=8 p=1 are out of the accepted range"
            )
        ) {
            try Identity(pem: pem) { Array("x".utf8) }
        }
        // N = 2^20 with r = 32 is within each bound but would need 4 GiB.
        let kdf2 = DER.sequence(
            DER.encode(DER.oid, OID.scrypt),
            DER.sequence(DER.encode(DER.octetString, [1, 2, 3]), DER.integer(1 << 20), DER.integer(32), DER.integer(1))
        )
        let der2 = DER.sequence(
            DER.sequence(DER.encode(DER.oid, OID.pbes2), DER.sequence(kdf2, scheme)),
            DER.encode(DER.octetString, [UInt8](repeating: 0, count: 32))
        )
        #expect(
            throws: KeyError.unsupportedEncryption("scrypt parameters N=1048576 r=32 p=1 are out of the accepted range")
        ) {
            try Identity(pem: PEM(label: "ENCRYPTED PRIVATE KEY", der: der2).text) { Array("x".utf8) }
        }
        // PBKDF2 with 2^31 iterations.
        let pbkdf2 = DER.sequence(
            DER.encode(DER.oid, OID.pbkdf2),
            DER.sequence(DER.encode(DER.octetString, [1, 2, 3]), DER.integer(1 << 31))
        )
        let der3 = DER.sequence(
            DER.sequence(DER.encode(DER.oid, OID.pbes2), DER.sequence(pbkdf2, scheme)),
            DER.encode(DER.octetString, [UInt8](repeating: 0, count: 32))
        )
        #expect(throws: KeyError.unsupportedEncryption("PBKDF2 iteration count 2147483648 is out of range")) {
            try Identity(pem: PEM(label: "ENCRYPTED PRIVATE KEY", der: der3).text) { Array("x".utf8) }
        }
    }

    @Test func refusesInvalidPoints() throws {
        var rng = SeededRandom(seed: "points")
        var point = Identity.generate(using: &rng).publicKey.point
        point[64] ^= 1  // off the curve
        #expect(throws: KeyError.invalidPoint) { try PublicKey(point: point) }
        let fileLock = PEM(label: "PUBLIC KEY", der: point).armor(lineEnding: "\r\n")
        #expect(throws: KeyError.invalidPoint) { try PublicKey(pem: fileLock) }
        let spki = DER.sequence(
            DER.sequence(DER.encode(DER.oid, OID.ecPublicKey), DER.encode(DER.oid, OID.prime256v1)),
            DER.encode(DER.bitString, [0] + point)
        )
        #expect(throws: KeyError.invalidPoint) { try PublicKey(spki: spki) }
        // The point at infinity and an all-zero point.
        #expect(throws: KeyError.invalidPoint) { try PublicKey(point: [0]) }
        #expect(throws: KeyError.invalidPoint) { try PublicKey(point: [4] + [UInt8](repeating: 0, count: 64)) }
    }

    @Test func refusesMalformedPEM() throws {
        let good = try Fixtures.text("keys/openssl-p256.pub.pem")
        let cases: [(String, String)] = [
            ("", "no BEGIN"),
            ("hello world", "no BEGIN"),
            (String(good.dropLast(27)), "truncated: END line gone"),
            (good.replacingOccurrences(of: "END PUBLIC", with: "END PRIVATE"), "mismatched label"),
            (good.replacingOccurrences(of: "MFkw", with: "MF!w"), "bad base64"),
            (good + "garbage\n", "data after END"),
        ]
        for (text, why) in cases {
            #expect(throws: KeyError.self, "\(why)") { try PublicKey(pem: text) }
            do { _ = try PublicKey(pem: text) } catch let e as KeyError {
                guard case .malformedPEM = e else {
                    Issue.record("\(why): \(e)")
                    continue
                }
            }
        }
        // Valid base64 of a truncated DER.
        let der = Array(try PEM(parsing: good).der.dropLast(5))
        #expect(throws: KeyError.self) { try PublicKey(pem: PEM(label: "PUBLIC KEY", der: der).text) }
        // Trailing bytes after the SPKI.
        let long = try PEM(parsing: good).der + [0]
        #expect(throws: KeyError.malformedKey("SubjectPublicKeyInfo: trailing bytes")) {
            try PublicKey(pem: PEM(label: "PUBLIC KEY", der: long).text)
        }
        #expect(throws: KeyError.privateKeyWherePublicNeeded) {
            try PublicKey(pem: Fixtures.text("keys/openssl-p256.key.pem"))
        }
    }

    /// Each wrong-key case says what the key is and what is needed, and never contradicts itself (every
    /// reason once ended in ", but a P-256 key is needed").
    @Test func wrongKeyMessagesAreEachTheirOwnSentence() throws {
        let p256Private = try Fixtures.text("keys/openssl-p256.key.pem")
        let p256Public = try Fixtures.text("keys/openssl-p256.pub.pem")
        func error(_ body: () throws -> Void) -> KeyError? {
            do {
                try body()
                return nil
            } catch let e as KeyError { return e } catch { return nil }
        }
        let privateAsPublic = error { _ = try PublicKey(pem: p256Private) }
        #expect(privateAsPublic == .privateKeyWherePublicNeeded)
        #expect(
            privateAsPublic?.description.hasPrefix("this is a private key, but a public key is needed here") == true
        )
        #expect(privateAsPublic?.description.contains("countersign pubkey") == true)

        let publicAsPrivate = error { _ = try Identity(pem: p256Public) { [] } }
        #expect(publicAsPrivate == .publicKeyWherePrivateNeeded)
        #expect(
            publicAsPrivate?.description.hasPrefix("this is a public key, but your private key is needed here") == true
        )

        let rsa512 = error { _ = try LegacyRSAKey.generate(bits: 512) }
        #expect(rsa512 == .unsupportedRSASize(512))
        #expect(rsa512?.description.hasPrefix("RSA-512 is not supported: choose 1024, 2048, 3072 or 4096 bits") == true)

        let p256AsRSA = error { _ = try LegacyRSAPublicKey(pem: p256Public) }
        #expect(p256AsRSA == .rsaKeyNeeded(found: "a P-256 key"))
        #expect(
            p256AsRSA?.description.hasPrefix(
                "wrong key type: this is a P-256 key, but the PingIdentity format needs an RSA key"
            ) == true
        )
        #expect(error { _ = try LegacyRSAKey(pem: p256Private) { [] } } == .rsaKeyNeeded(found: "a P-256 key"))
        #expect(
            error { _ = try LegacyRSAPublicKey(pem: Fixtures.text("keys/rsa1024.key.pem")) }
                == .privateKeyWherePublicNeeded
        )
        #expect(
            error { _ = try LegacyRSAKey(pem: Fixtures.text("keys/rsa1024.pub.pem")) { [] } }
                == .publicKeyWherePrivateNeeded
        )
        #expect(
            error { _ = try LegacyRSAPublicKey(pem: Fixtures.text("keys/p384.pub.pem")) }
                == .rsaKeyNeeded(found: "a P-384 key")
        )

        for e in [privateAsPublic, publicAsPrivate, rsa512, p256AsRSA].compactMap({ $0 }) {
            #expect(!e.description.contains("a P-256 key is needed"), "\(e)")
        }
        // A P-256 key where one is needed still says so.
        #expect(
            KeyError.wrongKeyType("a P-384 key").description
                == "wrong key type: this is a P-384 key, but a P-256 key is needed; make one with `countersign keygen`"
        )
    }

    @Test func derReaderIsStrict() throws {
        // Non-minimal length (0x81 0x05) and lengths past the end.
        var r = DER.Reader([0x04, 0x81, 0x05, 1, 2, 3, 4, 5])
        #expect(throws: DER.Error.self) { try r.read(DER.octetString) }
        r = DER.Reader([0x04, 0x84, 0x7f, 0xff, 0xff, 0xff, 1])
        #expect(throws: DER.Error.self) { try r.read(DER.octetString) }
        r = DER.Reader([0x02, 0x02, 0x00, 0x01])
        #expect(throws: DER.Error.self) { try r.readInt() }
        r = DER.Reader([0x02, 0x01, 0x80])
        #expect(throws: DER.Error.self) { try r.readInt() }
    }
}
