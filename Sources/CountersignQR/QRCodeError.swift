/// Why `QRCode.init` failed. These two cases are all there are.
public enum QRCodeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The text, `bytes` long in UTF-8, does not fit even the largest symbol (version 40) at that level
    /// of error correction. A lower level, or a shorter text, may fit.
    case tooLong(bytes: Int, correction: QRCode.Level)
    /// libqrencode returned no symbol for another reason (it sets `errno`: EINVAL for input it rejects,
    /// ENOMEM when out of memory).
    case encodingFailed(errno: Int32)

    public var description: String {
        switch self {
        case let .tooLong(bytes, correction):
            "the text (\(bytes) bytes) is too long for a QR code at error correction \(correction)"
        case let .encodingFailed(errno):
            "the QR code could not be encoded (libqrencode failed, errno \(errno))"
        }
    }
}
