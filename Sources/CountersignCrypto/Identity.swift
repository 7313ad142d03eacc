import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A P-256 private key: what opens files sealed to it and signs what its owner seals (docs/SPEC.md §2.1).
public struct Identity: Sendable {
    let agreementKey: P256.KeyAgreement.PrivateKey
    public let publicKey: PublicKey

    init(_ key: P256.KeyAgreement.PrivateKey) {
        agreementKey = key
        publicKey = PublicKey(key.publicKey)
    }

    /// A new identity whose scalar comes from `rng`. Package-only: a seeded or replayed generator makes a
    /// key anyone with the seed can recompute.
    package static func generate<R: RandomNumberGenerator>(using rng: inout R) -> Identity {
        Identity(P256Scalar.keyAgreementKey(using: &rng))
    }

    /// The key from its 32-byte private scalar (a server keeps its challenge key this way, in its own
    /// secret store); throws for a scalar that is zero or not below the group order.
    public init(privateScalar: [UInt8]) throws {
        self.init(try P256.KeyAgreement.PrivateKey(rawRepresentation: privateScalar))
    }

    /// The 32-byte private scalar.
    public var privateScalar: [UInt8] { Array(agreementKey.rawRepresentation) }

    public static func generate() -> Identity {
        var rng = SystemRandomNumberGenerator()
        return generate(using: &rng)
    }

    /// True when the PEM holds an `ENCRYPTED PRIVATE KEY` (so the caller knows to ask for a passphrase).
    public static func isEncrypted(pem text: String) -> Bool {
        (try? PEM(parsing: text))?.label == "ENCRYPTED PRIVATE KEY"
    }

    /// Reads a private key file: PKCS#8, encrypted PKCS#8 (then `passphrase` is called), or SEC 1.
    public init(pem text: String, passphrase: () throws -> [UInt8]) throws {
        let pem = try PEM(parsing: text)
        switch pem.label {
        case "PRIVATE KEY":
            try self.init(pkcs8: pem.der)
        case "ENCRYPTED PRIVATE KEY":
            let pass = try passphrase()
            let der = try PKCS8Encryption.decrypt(pem.der, passphrase: pass)
            do {
                try self.init(pkcs8: der)
            } catch KeyError.malformedKey {
                // CBC padding can pass by chance with a wrong passphrase; the DER then is garbage.
                throw KeyError.wrongPassphrase
            }
        case "EC PRIVATE KEY":
            guard let key = try? P256.KeyAgreement.PrivateKey(derRepresentation: pem.der) else {
                throw KeyError.malformedKey("EC PRIVATE KEY is not a valid P-256 key")
            }
            self.init(key)
        case "RSA PRIVATE KEY":
            throw KeyError.wrongKeyType("an RSA key")
        case "PUBLIC KEY":
            throw KeyError.publicKeyWherePrivateNeeded
        default:
            throw KeyError.malformedPEM("unexpected PEM label \"\(pem.label)\"; expected PRIVATE KEY")
        }
    }

    init(pkcs8 der: [UInt8]) throws {
        do {
            var outer = DER.Reader(der)
            var info = try outer.enter(DER.sequence)
            try outer.expectEnd()
            _ = try info.readInt()
            var alg = try info.enter(DER.sequence)
            let algOID = try alg.readOID()
            let curve = alg.peekTag == DER.oid ? try alg.readOID() : nil
            guard algOID == OID.ecPublicKey, curve == OID.prime256v1 else {
                throw KeyError.wrongKeyType(OID.name(ofKeyAlgorithm: algOID, curve: curve))
            }
        } catch let e as DER.Error {
            throw KeyError.malformedKey("PrivateKeyInfo: \(e.why)")
        }
        guard let key = try? P256.KeyAgreement.PrivateKey(derRepresentation: der) else {
            throw KeyError.malformedKey("PrivateKeyInfo does not hold a valid P-256 key")
        }
        self.init(key)
    }

    /// The key file: encrypted PKCS#8 (scrypt + AES-256-CBC) when a passphrase is given, else plain PKCS#8.
    /// Package-only: the salt and IV come from `rng` (pinned for vectors).
    package func pem<R: RandomNumberGenerator>(passphrase: [UInt8]?, using rng: inout R) throws -> String {
        let pkcs8 = Array(agreementKey.derRepresentation)
        guard let passphrase else { return PEM(label: "PRIVATE KEY", der: pkcs8).text }
        let der = try PKCS8Encryption.encrypt(pkcs8, passphrase: passphrase, using: &rng)
        return PEM(label: "ENCRYPTED PRIVATE KEY", der: der).text
    }

    public func pem(passphrase: [UInt8]?) throws -> String {
        var rng = SystemRandomNumberGenerator()
        return try pem(passphrase: passphrase, using: &rng)
    }

    package var signingKey: P256.Signing.PrivateKey {
        try! P256.Signing.PrivateKey(rawRepresentation: agreementKey.rawRepresentation)
    }
}
