import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A P-256 public key: a recipient to seal to, or a sender whose signature is expected.
public struct PublicKey: Equatable, Sendable {
    /// The 65-byte uncompressed point `04 || X || Y`.
    public let point: [UInt8]
    let agreementKey: P256.KeyAgreement.PublicKey

    /// The textual forms `pubkey --format` can write.
    public enum Format: String, CaseIterable, Sendable {
        /// SubjectPublicKeyInfo PEM, as OpenSSL writes.
        case spki
        /// FileLock's raw-point PEM with CRLF lines.
        case filelock
    }

    public static func == (a: PublicKey, b: PublicKey) -> Bool { a.point == b.point }

    init(_ key: P256.KeyAgreement.PublicKey) {
        agreementKey = key
        point = Array(key.x963Representation)
    }

    /// From a 65-byte uncompressed or 33-byte compressed SEC 1 point.
    public init(point: [UInt8]) throws {
        let key: P256.KeyAgreement.PublicKey
        do {
            switch (point.count, point.first) {
            case (65, 0x04?): key = try P256.KeyAgreement.PublicKey(x963Representation: point)
            case (33, 0x02?), (33, 0x03?): key = try P256.KeyAgreement.PublicKey(compressedRepresentation: point)
            default: throw KeyError.invalidPoint
            }
        } catch {
            throw KeyError.invalidPoint
        }
        self.init(key)
    }

    /// From an SPKI DER; names the key type when it is not P-256.
    public init(spki der: [UInt8]) throws {
        do {
            var outer = DER.Reader(der)
            var spki = try outer.enter(DER.sequence)
            try outer.expectEnd()
            var alg = try spki.enter(DER.sequence)
            let algOID = try alg.readOID()
            let curve = alg.peekTag == DER.oid ? try alg.readOID() : nil
            if curve == nil, alg.peekTag == DER.null { try alg.readNull() }  // RSA's parameters
            try alg.expectEnd()
            guard algOID == OID.ecPublicKey, curve == OID.prime256v1 else {
                throw KeyError.wrongKeyType(OID.name(ofKeyAlgorithm: algOID, curve: curve))
            }
            let bits = try spki.read(DER.bitString)
            try spki.expectEnd()
            guard bits.first == 0 else { throw KeyError.malformedKey("BIT STRING with unused bits") }
            try self.init(point: Array(bits.dropFirst()))
        } catch let e as DER.Error {
            throw KeyError.malformedKey("SubjectPublicKeyInfo: \(e.why)")
        }
    }

    /// Parses a public key file in either form (docs/SPEC.md §2.3). A private key file is refused with
    /// a hint, so that a user who swaps the two arguments learns why.
    public init(pem text: String) throws {
        let pem = try PEM(parsing: text)
        switch pem.label {
        case "PUBLIC KEY":
            if pem.der.count == 65, pem.der[0] == 0x04 {
                try self.init(point: pem.der)
            } else {
                try self.init(spki: pem.der)
            }
        case "EC PUBLIC KEY":
            try self.init(spki: pem.der)
        case "RSA PUBLIC KEY":
            throw KeyError.wrongKeyType("an RSA key")
        case "PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "EC PRIVATE KEY":
            throw KeyError.privateKeyWherePublicNeeded
        default:
            throw KeyError.malformedPEM("unexpected PEM label \"\(pem.label)\"; expected PUBLIC KEY")
        }
    }

    /// DER SubjectPublicKeyInfo of the uncompressed point.
    public var spkiDER: [UInt8] {
        DER.sequence(
            DER.sequence(DER.encode(DER.oid, OID.ecPublicKey), DER.encode(DER.oid, OID.prime256v1)),
            DER.encode(DER.bitString, [0] + point)
        )
    }

    public var fingerprint: Fingerprint { Fingerprint(spki: spkiDER) }

    public func pem(_ format: Format) -> String {
        switch format {
        case .spki: return PEM(label: "PUBLIC KEY", der: spkiDER).text
        case .filelock: return PEM(label: "PUBLIC KEY", der: point).armor(lineEnding: "\r\n")
        }
    }

    var signingKey: P256.Signing.PublicKey {
        // The point was validated on the way in, so this cannot fail.
        try! P256.Signing.PublicKey(x963Representation: point)
    }
}
