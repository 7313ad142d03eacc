import CryptoExtras
import Foundation

/// An RSA key pair for the PingIdentity app's legacy payload (RSA-1024 PKCS#1 v1.5). Only the legacy
/// format uses it; everything else is P-256.
public struct LegacyRSAKey: Sendable {
    let key: _RSA.Signing.PrivateKey

    /// 1024 is accepted only because the original app uses it; 2048, 3072 and 4096 are the sound choices.
    public static let allowedBits = [1024, 2048, 3072, 4096]

    public static func generate(bits: Int) throws -> LegacyRSAKey {
        guard allowedBits.contains(bits) else {
            throw KeyError.wrongKeyType("RSA-\(bits); --rsa-legacy takes one of \(allowedBits.map(String.init).joined(separator: ", "))")
        }
        let size = _RSA.Signing.KeySize(bitCount: bits)
        return LegacyRSAKey(key: bits < 2048 ? try _RSA.Signing.PrivateKey(unsafeKeySize: size) : try _RSA.Signing.PrivateKey(keySize: size))
    }

    /// PKCS#8, encrypted like P-256 identities when a passphrase is given.
    public func pem(passphrase: [UInt8]?) throws -> String {
        let pkcs8 = Array(key.pkcs8DERRepresentation)
        guard let passphrase else { return PEM(label: "PRIVATE KEY", der: pkcs8).text }
        var rng = SystemRandomNumberGenerator()
        return PEM(label: "ENCRYPTED PRIVATE KEY", der: try PKCS8Encryption.encrypt(pkcs8, passphrase: passphrase, using: &rng)).text
    }

    /// SubjectPublicKeyInfo PEM.
    public var publicKeyPEM: String { key.publicKey.pemRepresentation }

    /// SHA-256 of the SPKI DER, first 16 bytes, as for P-256 keys.
    public var fingerprint: Fingerprint { Fingerprint(spki: Array(key.publicKey.derRepresentation)) }
}
