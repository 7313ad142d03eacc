import Crypto
import CryptoExtras

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An RSA key pair for the PingIdentity app's legacy payload (RSA-1024 PKCS#1 v1.5). Only the legacy
/// format uses it; everything else is P-256.
public struct LegacyRSAKey: Sendable {
    let key: _RSA.Signing.PrivateKey

    /// 1024 is accepted only because the original app uses it; 2048, 3072 and 4096 are the sound choices.
    public static let allowedBits = [1024, 2048, 3072, 4096]

    public static func generate(bits: Int) throws -> LegacyRSAKey {
        guard allowedBits.contains(bits) else {
            throw KeyError.unsupportedRSASize(bits)
        }
        let size = _RSA.Signing.KeySize(bitCount: bits)
        return LegacyRSAKey(
            key: bits < 2048
                ? try _RSA.Signing.PrivateKey(unsafeKeySize: size) : try _RSA.Signing.PrivateKey(keySize: size)
        )
    }

    /// Reads a PKCS#8 (optionally encrypted) or PKCS#1 RSA private key. Keys under 2048 bits are accepted
    /// because the PingIdentity app uses 1024; the payload format warns about it.
    public init(pem text: String, passphrase: () throws -> [UInt8]) throws {
        let pem = try PEM(parsing: text)
        var der = pem.der
        switch pem.label {
        case "ENCRYPTED PRIVATE KEY": der = try PKCS8Encryption.decrypt(pem.der, passphrase: passphrase())
        case "PRIVATE KEY", "RSA PRIVATE KEY": break
        case "EC PRIVATE KEY": throw KeyError.rsaKeyNeeded(found: "an EC key")
        case "PUBLIC KEY", "RSA PUBLIC KEY": throw KeyError.publicKeyWherePrivateNeeded
        default: throw KeyError.malformedPEM("unexpected PEM label \"\(pem.label)\"; expected PRIVATE KEY")
        }
        guard let key = try? _RSA.Signing.PrivateKey(unsafeDERRepresentation: der) else {
            // A readable PKCS#8 of another algorithm is a wrong key, even when it was encrypted (the
            // passphrase was right); anything else that was encrypted is most likely a wrong passphrase.
            if pem.label != "RSA PRIVATE KEY", let other = OID.name(ofPKCS8: der), other != "an RSA key" {
                throw KeyError.rsaKeyNeeded(found: other)
            }
            throw pem.label == "ENCRYPTED PRIVATE KEY"
                ? KeyError.wrongPassphrase : KeyError.malformedKey("not a valid RSA private key")
        }
        self.key = key
    }

    init(key: _RSA.Signing.PrivateKey) { self.key = key }

    public var publicKey: LegacyRSAPublicKey { LegacyRSAPublicKey(key: key.publicKey) }

    /// PKCS#8, encrypted like P-256 identities when a passphrase is given.
    public func pem(passphrase: [UInt8]?) throws -> String {
        let pkcs8 = Array(key.pkcs8DERRepresentation)
        guard let passphrase else { return PEM(label: "PRIVATE KEY", der: pkcs8).text }
        var rng = SystemRandomNumberGenerator()
        return PEM(
            label: "ENCRYPTED PRIVATE KEY",
            der: try PKCS8Encryption.encrypt(pkcs8, passphrase: passphrase, using: &rng)
        ).text
    }

    /// SubjectPublicKeyInfo PEM.
    public var publicKeyPEM: String { key.publicKey.pemRepresentation }

    /// SHA-256 of the SPKI DER, first 16 bytes, as for P-256 keys.
    public var fingerprint: Fingerprint { Fingerprint(spki: Array(key.publicKey.derRepresentation)) }
}

/// An RSA public key (SPKI or PKCS#1 PEM) for the PingIdentity legacy payload.
public struct LegacyRSAPublicKey: Sendable {
    let key: _RSA.Signing.PublicKey

    init(key: _RSA.Signing.PublicKey) { self.key = key }

    public init(pem text: String) throws {
        let pem = try PEM(parsing: text)
        switch pem.label {
        case "PUBLIC KEY", "RSA PUBLIC KEY": break
        case "PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY":
            throw KeyError.privateKeyWherePublicNeeded
        default: throw KeyError.malformedPEM("unexpected PEM label \"\(pem.label)\"; expected PUBLIC KEY")
        }
        guard let key = try? _RSA.Signing.PublicKey(unsafeDERRepresentation: pem.der) else {
            if pem.der.count == 65, pem.der[0] == 0x04 {
                throw KeyError.rsaKeyNeeded(found: "a P-256 key (FileLock form)")
            }
            if let other = OID.name(ofSPKI: pem.der), other != "an RSA key" {
                throw KeyError.rsaKeyNeeded(found: other)
            }
            throw KeyError.malformedKey("not a valid RSA public key")
        }
        self.key = key
    }

    public var bits: Int { key.keySizeInBits }
    /// PKCS#1 v1.5 encryption leaves k − 11 bytes for the message.
    public var maxPlaintext: Int { bits / 8 - 11 }
    public var pem: String { key.pemRepresentation + "\n" }
}
