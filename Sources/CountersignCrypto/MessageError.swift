/// Why a message envelope was refused (docs/SPEC.md §8.4). The cases are the `expect:` classes of the
/// message vectors. Messages are for the local user; they never include plaintext or keys.
public enum MessageError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not a Countersign message envelope.
    case unknownFormat
    /// An envelope of a version this release does not read.
    case unknownVersion(UInt8)
    /// A field is out of range, out of order, cut short, or followed by extra bytes.
    case malformed(String)
    /// The body (or the armored text) exceeds the envelope's limit.
    case tooLarge(limit: Int)
    /// The envelope names another sender than the one expected, or its signature does not verify.
    case badSignature(expected: Fingerprint?, found: Fingerprint?)
    /// No stanza carries this identity's key ID.
    case notForThisKey(sealedTo: [Fingerprint], yours: Fingerprint)
    /// The signature held but this recipient's stanza or the body does not open.
    case tampered
    /// Sealing was asked for something the format cannot carry (no recipients, too many, a key twice,
    /// a plaintext over 1 MiB, a content type outside the allowed characters).
    case invalidArgument(String)

    public var description: String {
        switch self {
        case .unknownFormat:
            return "unknown format: this is not a Countersign message envelope"
        case .unknownVersion(let v):
            return "unknown version \(v): this message was sealed by a newer Countersign; upgrade to open it"
        case .malformed(let why):
            return "malformed envelope: \(why)"
        case .tooLarge(let limit):
            return "too large: a message envelope holds at most \(limit) bytes; seal files with `countersign seal`"
        case .badSignature(let expected?, let found?) where expected != found:
            return "Signature Not Verified: the message is from \(found), not from the expected sender \(expected)"
        case .badSignature:
            return "Signature Not Verified: the sender signature does not verify; the message was altered or forged"
        case .notForThisKey(let to, let yours):
            return
                "not for this key: the message is sealed to \(to.map(\.description).joined(separator: ", ")); your key is \(yours)"
        case .tampered:
            return "tampered: the signature is valid but the sealed text does not open with your key"
        case .invalidArgument(let why):
            return why
        }
    }
}
