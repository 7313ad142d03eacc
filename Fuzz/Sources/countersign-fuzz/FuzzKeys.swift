@_spi(Fuzzing) import CountersignCrypto
import Foundation

/// The identity every vector in Tests/CountersignCryptoTests/Vectors is sealed to, so that the seeds
/// (Fuzz/seeds.py) open and mutations reach past the key unwrap into the chunks and the body.
enum FuzzKeys {
    static let vectorIdentity = try! Identity(
        pem: """
            -----BEGIN PRIVATE KEY-----
            MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgB6vK8RDYL1CFKfhY
            Ceg7MPJEaCPUMXGd+yYyL7vbDR2hRANCAAQkk7B4VaA70SO1pHchRwfwGIh8TebX
            Xo/o0PM1QIFLXB32ABfdPR1+tzydWSIne31KYCaoZpMhGEfy1bSHhwwN
            -----END PRIVATE KEY-----
            """,
        passphrase: { [] }
    )

    /// The vectors' sender ("alice"): messages and signed files verify under it.
    static let vectorSender = try! PublicKey(
        spki: Array(
            Data(
                base64Encoded:
                    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE7f1HE6Sm4xDWAYnsFslYB8dhe/zGJslleBBFJ+agsY2ubczQL7x3hFV9h7pwMZ+tkx4cDRdVe7irT1bVSdCb/w=="
            )!
        )
    )

    /// A fixed signer for the roundtrip targets.
    static let signer = try! Identity(privateScalar: (1...32).map { UInt8($0) })

    /// The passphrase the pkcs8 target offers every encrypted key. The text targets offer none (an encrypted
    /// key file stops at `passphraseRequired`): they would run the key derivation at its full bounds.
    static let passphrase = Array("correct horse".utf8)
    static func noPassphrase() throws -> [UInt8] { throw KeyError.passphraseRequired }

    static func text(_ data: [UInt8]) -> String { String(decoding: data, as: UTF8.self) }

    /// PEM armor, public keys in every form `PublicKey(pem:)` reads, and private key files. What parses
    /// must armor again to the same PEM and the same key.
    static func pem(_ data: [UInt8]) {
        let text = text(data)
        if let pem = try? PEM(parsing: text) {
            for ending in ["\n", "\r\n"] {
                guard let again = try? PEM(parsing: pem.armor(lineEnding: ending)) else {
                    finding("PEM \(pem.label) does not parse after armor(lineEnding: \(ending.debugDescription))")
                }
                guard again == pem else { finding("PEM \(pem.label) changes when armored again") }
            }
        }
        if let key = try? PublicKey(pem: text) {
            for format in PublicKey.Format.allCases {
                guard let again = try? PublicKey(pem: key.pem(format)), again == key else {
                    finding("a public key does not read back from its \(format) PEM")
                }
            }
        }
        if let identity = try? Identity(pem: text, passphrase: noPassphrase) {
            guard let pem = try? identity.pem(passphrase: nil),
                let again = try? Identity(pem: pem, passphrase: { [] }),
                again.publicKey == identity.publicKey
            else { finding("a private key does not read back from its PKCS#8 PEM") }
        }
        _ = Identity.isEncrypted(pem: text)
    }

    /// DER: PrivateKeyInfo, EncryptedPrivateKeyInfo (the key derivation bounded: 1 MiB of scrypt, 2,048
    /// PBKDF2 rounds), SubjectPublicKeyInfo and the names errors give to other algorithms.
    static func pkcs8(_ data: [UInt8]) {
        _ = try? Fuzzing.identity(pkcs8: data)
        if let der = try? Fuzzing.decryptPKCS8(
            data,
            passphrase: passphrase,
            maxScryptMemoryBytes: 1 << 20,
            maxIterations: 2048
        ) {
            _ = try? Fuzzing.identity(pkcs8: der)
        }
        if let key = try? PublicKey(spki: data) {
            guard let again = try? PublicKey(pem: key.pem(.spki)), again == key else {
                finding("an SPKI key does not read back from its PEM")
            }
        }
        _ = try? PublicKey(point: data)
        _ = Fuzzing.keyAlgorithmNames(data)
    }

    /// PingIdentity's legacy forms: its JSON payload and RSA key files.
    static func pingIdentity(_ data: [UInt8]) {
        let text = text(data)
        if let payload = try? PingIdentityPayload(json: text) {
            guard let again = try? PingIdentityPayload(json: payload.json), again == payload else {
                finding("a PingIdentity payload does not read back from its JSON")
            }
        }
        _ = try? LegacyRSAPublicKey(pem: text)
        _ = try? LegacyRSAKey(pem: text, passphrase: noPassphrase)
    }
}
