import Crypto
import CryptoExtras

/// A credential public key in COSE form (docs/SPEC.md §13.2): ES256 or RS256, and nothing else.
/// `encoded` keeps the bytes the authenticator sent, which is what the server stores. EdDSA is left out
/// until its keys can be checked for small order: swift-crypto accepts a small-order Ed25519 key, under
/// which one signature verifies for every message. The options list ES256 and RS256 only, so an
/// authenticator picks one of those.
public struct COSEKey: Sendable {
    public enum Algorithm: Int64, Sendable, CaseIterable {
        case es256 = -7
        case rs256 = -257
    }

    enum Verifier: Sendable {
        case p256(P256.Signing.PublicKey)
        case rsa(_RSA.Signing.PublicKey)
    }

    public let algorithm: Algorithm
    public let encoded: [UInt8]
    let verifier: Verifier

    public init(decoding bytes: [UInt8]) throws(WebAuthnError) {
        try self.init(CBOR(decoding: bytes), encoded: bytes)
    }

    init(_ map: CBOR, encoded: [UInt8]) throws(WebAuthnError) {
        guard map.entries != nil else { throw .malformed("the COSE key is not a map") }
        guard let kty = map[1]?.integer else { throw .malformed("the COSE key has no key type (1)") }
        guard let algValue = map[3]?.integer else { throw .malformed("the COSE key has no algorithm (3)") }
        guard let alg = Algorithm(rawValue: algValue) else {
            throw .unsupportedKey("COSE algorithm \(algValue) (ES256 -7 and RS256 -257 are)")
        }
        func bytes(_ label: Int64, _ name: String) throws(WebAuthnError) -> [UInt8] {
            guard let b = map[label]?.byteString else { throw .malformed("the COSE key has no \(name) (\(label))") }
            return b
        }
        switch (alg, kty) {
        case (.es256, 2):
            guard map[-1]?.integer == 1 else { throw .unsupportedKey("an EC2 key on a curve other than P-256") }
            let x = try bytes(-2, "x")
            let y = try bytes(-3, "y")
            guard x.count == 32, y.count == 32 else { throw .malformed("P-256 coordinates are not 32 bytes each") }
            guard let key = try? P256.Signing.PublicKey(x963Representation: [0x04] + x + y) else {
                throw .malformed("the P-256 point is not on the curve")
            }
            verifier = .p256(key)
        case (.rs256, 3):
            let n = try bytes(-1, "n")
            let e = try bytes(-2, "e")
            guard (256...512).contains(n.count), n.first != 0 else {
                throw .unsupportedKey("an RSA modulus of \(n.count) bytes (2048 to 4096 bits are accepted)")
            }
            guard e == [0x01, 0x00, 0x01] else { throw .unsupportedKey("an RSA exponent other than 65537") }
            guard let key = try? _RSA.Signing.PublicKey(n: n, e: e) else { throw .malformed("the RSA key") }
            verifier = .rsa(key)
        default:
            throw .malformed("COSE key type \(kty) does not go with algorithm \(alg.rawValue)")
        }
        self.algorithm = alg
        self.encoded = encoded
    }

    /// Whether `signature` (the form the algorithm's WebAuthn registration defines) signs `data`.
    public func isValidSignature(_ signature: [UInt8], for data: [UInt8]) -> Bool {
        switch verifier {
        case .p256(let key):
            guard let s = try? P256.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(s, for: data)
        case .rsa(let key):
            return key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature),
                for: data,
                padding: .insecurePKCS1v1_5
            )
        }
    }
}
