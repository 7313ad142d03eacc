/// The two sealed formats and how to tell them apart from the first bytes (docs/SPEC.md §4.7).
public enum SealedFormat: String, CaseIterable, Sendable {
    /// The streaming, multi-recipient format of docs/SPEC.md §4.
    case countersign
    /// FileLock's four-chunk package (one recipient, no signature, held in memory).
    case filelock

    /// How many leading bytes `detect` needs to see (fewer is fine at end of input).
    public static let detectionLength = 10

    /// `nil` for neither. A Countersign file is recognised by its magic, whatever its version.
    public static func detect(_ head: [UInt8]) -> SealedFormat? {
        if head.starts(with: SealedFileFormat.magic) { return .countersign }
        if head.starts(with: [0, 0, 0, UInt8(FileLockPackage.wrappedKeyLength)]) { return .filelock }
        return nil
    }

    /// True when a Countersign header's flags announce a sender signature.
    public static func isSigned(_ head: [UInt8]) -> Bool {
        head.count >= 10 && head.starts(with: SealedFileFormat.magic) && head[9] & SealedFileFormat.flagSigned != 0
    }
}
