/// Why WebAuthn data from an authenticator was refused (docs/SPEC.md §13). Messages name the part at
/// fault; they never include keys or signatures.
public enum WebAuthnError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Bytes that break the CBOR subset, the authenticator-data layout or the client data's shape.
    case malformed(String)
    /// A COSE key of an algorithm, key type or curve Countersign does not verify.
    case unsupportedKey(String)
    /// An attestation format other than `none` and `packed` self attestation.
    case unsupportedAttestation(String)
    /// A signature (attestation or assertion) that does not verify under the credential's key.
    case badSignature

    public var description: String {
        switch self {
        case .malformed(let why): "malformed WebAuthn data: \(why)"
        case .unsupportedKey(let why): "unsupported credential key: \(why)"
        case .unsupportedAttestation(let why): "unsupported attestation: \(why)"
        case .badSignature: "the signature does not verify under the credential's public key"
        }
    }
}
