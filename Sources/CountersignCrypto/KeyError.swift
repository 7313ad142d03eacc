/// Why a key, a PEM file or a passphrase was refused. Each case's `description` says what is wrong and
/// what to do next; none of them carries secret material.
public enum KeyError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No `-----BEGIN …-----`/`-----END …-----` pair, mismatched labels, or bad base64.
    case malformedPEM(String)
    /// A valid key of another algorithm or curve where a P-256 key is needed; names what it is instead.
    case wrongKeyType(String)
    /// A private key file where a public key is needed (e.g. given as a recipient).
    case privateKeyWherePublicNeeded
    /// A public key file where a private key (an identity) is needed.
    case publicKeyWherePrivateNeeded
    /// A key that is not RSA where the PingIdentity payload needs one; names what it is instead.
    case rsaKeyNeeded(found: String)
    /// An RSA size outside `LegacyRSAKey.allowedBits`.
    case unsupportedRSASize(Int)
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
        case .malformedPEM(let why):
            return "malformed PEM: \(why); expected a PEM file as written by `countersign keygen` or OpenSSL"
        case .wrongKeyType(let what):
            return "wrong key type: this is \(what), but a P-256 key is needed; make one with `countersign keygen`"
        case .privateKeyWherePublicNeeded:
            return
                "this is a private key, but a public key is needed here; give its public key instead (`countersign pubkey KEYFILE` prints it), and keep the private key to yourself"
        case .publicKeyWherePrivateNeeded:
            return "this is a public key, but your private key is needed here: the file `countersign keygen -o` wrote"
        case .rsaKeyNeeded(let found):
            return
                "wrong key type: this is \(found), but the PingIdentity format needs an RSA key; make one with `countersign keygen --rsa-legacy 1024`"
        case .unsupportedRSASize(let bits):
            let sizes = LegacyRSAKey.allowedBits.map(String.init)
            return
                "RSA-\(bits) is not supported: choose \(sizes.dropLast().joined(separator: ", ")) or \(sizes.last!) bits (1024 is weak; only the PingIdentity app needs it)"
        case .invalidPoint:
            return "invalid public key: the point is not on the P-256 curve (the file is corrupt or hostile)"
        case .malformedKey(let why): return "malformed key: \(why)"
        case .wrongPassphrase: return "wrong passphrase for this key file (or the file is corrupt)"
        case .unsupportedEncryption(let what):
            return "unsupported key encryption: \(what); re-encrypt it with `openssl pkcs8 -topk8 -scrypt`"
        case .passphraseRequired:
            return "the key file is encrypted: give the passphrase with --passphrase-file or on a terminal"
        }
    }
}
