import Crypto

/// A registration's attestation object (docs/SPEC.md §13.4): `none`, or `packed` self attestation checked
/// under the new credential's own key; `packed` with a certificate chain is read as `none`.
public struct AttestationObject: Sendable {
    public enum Format: String, Sendable {
        case none
        case packedSelf = "packed"
    }

    public let format: Format
    public let authenticatorData: AuthenticatorData
    let attStmt: CBOR

    public init(decoding bytes: [UInt8]) throws(WebAuthnError) {
        let map = try CBOR(decoding: bytes)
        guard let entries = map.entries, entries.count == 3,
            let fmt = map["fmt"]?.textString, let attStmt = map["attStmt"], attStmt.entries != nil,
            let authData = map["authData"]?.byteString
        else { throw .malformed("the attestation object is not a map of fmt, attStmt and authData") }
        authenticatorData = try AuthenticatorData(parsing: authData)
        guard authenticatorData.attested != nil else {
            throw .malformed("the registration's authenticator data carries no credential")
        }
        switch fmt {
        case "none":
            guard attStmt.entries?.isEmpty == true else { throw .malformed("a none attestation with a statement") }
            format = .none
        case "packed":
            guard attStmt["ecdaaKeyId"] == nil else { throw .unsupportedAttestation("packed ECDAA attestation") }
            guard attStmt["alg"]?.integer != nil, attStmt["sig"]?.byteString != nil else {
                throw .malformed("a packed attestation statement without alg and sig")
            }
            if let x5c = attStmt["x5c"] {
                // A certificate chain: Countersign asked for none and uses no attestation (SPEC §13.4).
                guard case .array(let certs) = x5c, !certs.isEmpty, certs.allSatisfy({ $0.byteString != nil }),
                    attStmt.entries?.count == 3
                else { throw .malformed("a packed attestation statement's x5c is not an array of certificates") }
                format = .none
            } else {
                guard attStmt.entries?.count == 2 else {
                    throw .malformed("a packed attestation statement that is not {alg, sig}")
                }
                format = .packedSelf
            }
        default:
            throw .unsupportedAttestation("format \(fmt) (none and packed self attestation are accepted)")
        }
        self.attStmt = attStmt
    }

    /// The new credential: its ID, key and AAGUID.
    public var credential: AuthenticatorData.AttestedCredential { authenticatorData.attested! }

    /// Checks the statement against `clientDataHash` (SHA-256 of the clientDataJSON sent with it).
    public func verify(clientDataHash: [UInt8]) throws(WebAuthnError) {
        guard format == .packedSelf else { return }
        let key = credential.publicKey
        guard attStmt["alg"]?.integer == key.algorithm.rawValue else {
            throw .malformed("the packed statement's alg is not the credential key's")
        }
        guard key.isValidSignature(attStmt["sig"]!.byteString!, for: authenticatorData.bytes + clientDataHash) else {
            throw .badSignature
        }
    }
}

/// An assertion's signature: over `authenticatorData || SHA-256(clientDataJSON)` under the stored key.
public enum WebAuthnAssertion {
    public static func verify(
        signature: [UInt8],
        authenticatorData: AuthenticatorData,
        clientData: ClientData,
        key: COSEKey
    ) throws(WebAuthnError) {
        guard key.isValidSignature(signature, for: authenticatorData.bytes + clientData.hash) else {
            throw .badSignature
        }
    }
}
