/// Why a key, a PEM file or a passphrase was refused. Each case's `description` says what is wrong and
/// what to do next; none of them carries secret material.
public enum KeyError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No `-----BEGIN …-----`/`-----END …-----` pair, mismatched labels, or bad base64.
    case malformedPEM(String)
    /// The key is valid but not a P-256 key (names what it is instead).
    case wrongKeyType(String)
    /// The encoded point is not on P-256, or is the point at infinity.
    case invalidPoint
    /// The DER inside the PEM is malformed or has trailing bytes.
    case malformedKey(String)
    /// The passphrase does not decrypt the key file.
    case wrongPassphrase
    /// The key file is encrypted with an algorithm or parameters we refuse.
    case unsupportedEncryption(String)
    /// The key file is encrypted and no passphrase was supplied.
    case passphraseRequired

    public var description: String {
        switch self {
        case .malformedPEM(let why): return "malformed PEM: \(why); expected a PEM file as written by `countersign keygen` or OpenSSL"
        case .wrongKeyType(let what): return "wrong key type: this is \(what), but a P-256 key is needed; make one with `countersign keygen`"
        case .invalidPoint: return "invalid public key: the point is not on the P-256 curve (the file is corrupt or hostile)"
        case .malformedKey(let why): return "malformed key: \(why)"
        case .wrongPassphrase: return "wrong passphrase for this key file (or the file is corrupt)"
        case .unsupportedEncryption(let what): return "unsupported key encryption: \(what); re-encrypt it with `openssl pkcs8 -topk8 -scrypt`"
        case .passphraseRequired: return "the key file is encrypted: give the passphrase with --passphrase-file or on a terminal"
        }
    }
}
