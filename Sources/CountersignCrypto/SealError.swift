/// Why a sealed file or package was refused. The cases are the `expect:` classes of the test vectors
/// (docs/SPEC.md §4.5). Messages are for the local user; they never include plaintext or keys.
public enum SealError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Neither a Countersign sealed file nor a FileLock package.
    case unknownFormat
    /// A Countersign file of a version this release does not read.
    case unknownVersion(UInt8)
    /// The header is malformed or was altered (bad field, failed unwrap of our stanza, bad MAC).
    case header(String)
    /// No recipient stanza carries this identity's key ID.
    case notForThisKey(sealedTo: [Fingerprint], yours: Fingerprint)
    /// A payload chunk, the signature block or the bytes after it failed authentication.
    case tampered
    /// The input ended before the final chunk.
    case truncated
    /// `--from` demanded a sender signature and the file has none.
    case signatureMissing
    /// The signature is invalid, or made by another key than the one demanded.
    case badSignature(expected: Fingerprint?, found: Fingerprint?)
    /// A FileLock package with a malformed structure (lengths, trailing bytes).
    case malformed(String)
    /// The input exceeds the size this format can be handled in (FileLock: held in memory).
    case tooLarge(limit: Int)
    /// Too many recipients or a file name that cannot be carried.
    case invalidArgument(String)

    public var description: String {
        switch self {
        case .unknownFormat:
            return "unknown format: this is neither a Countersign sealed file nor a FileLock package"
        case .unknownVersion(let v):
            return "unknown version \(v): this file was sealed by a newer Countersign; upgrade to open it"
        case .header(let why):
            return "tampered or corrupt header: \(why)"
        case .notForThisKey(let to, let yours):
            if to.isEmpty {
                return
                    "not sealed to this key (a FileLock package names no recipient; its key wrap does not open with \(yours))"
            }
            let list = to.map(\.description).joined(separator: ", ")
            return "not sealed to this key: the file is sealed to \(list); your key is \(yours)"
        case .tampered:
            return "tampered or corrupt: the payload failed authentication"
        case .truncated:
            return "truncated: the file ends before its final chunk; get a complete copy"
        case .signatureMissing:
            return "signature missing: the file is not signed, but --from demands a signature"
        case .badSignature(let expected, let found):
            switch (expected, found) {
            case let (e?, f?) where e != f:
                return "signature invalid: signed by \(f), not by the expected \(e)"
            default:
                return "signature invalid: the sender signature does not verify"
            }
        case .malformed(let why):
            return "malformed package: \(why)"
        case .tooLarge(let limit):
            return
                "too large: the FileLock format is held in memory and limited to \(limit) bytes; use the default format (no --format)"
        case .invalidArgument(let why):
            return why
        }
    }
}
