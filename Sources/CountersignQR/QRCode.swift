import CQRencode

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A QR code symbol encoded by libqrencode, kept as a plain matrix so that rendering needs no C.
///
/// Renderers (`terminal`, `pbm`, `png`) add the 4-module quiet zone the standard requires; without it
/// scanners often fail to find the finder patterns.
public struct QRCode: Sendable, Hashable {
    /// Modules per side, without the quiet zone (21 for version 1, 177 for version 40).
    public let size: Int
    /// Row-major, `true` for dark.
    let modules: [Bool]

    /// The width of the light border every renderer adds around the symbol, in modules.
    public static let quietZone = 4

    /// Encodes `text` (as UTF-8) in the smallest symbol version that holds it at `correction`.
    ///
    /// Throws `QRCodeError.tooLong` when even version 40 cannot hold it (2,331 bytes of arbitrary
    /// text at `.medium`, more if long runs are digits or upper-case letters).
    public init(_ text: String, correction: Level = .medium) throws {
        let bytes = Array(text.utf8)
        errno = 0
        let code: UnsafeMutablePointer<QRcode>?
        if bytes.contains(0) {
            // A C string cannot carry NUL, so such text goes through the byte API (8-bit mode only).
            code = bytes.withUnsafeBufferPointer {
                QRcode_encodeData(Int32($0.count), $0.baseAddress, 0, correction.qrencode)
            }
        } else {
            // Mixed modes: runs of digits and upper case take fewer bits than 8-bit mode. Case-sensitive,
            // or lower-case letters would come back upper-cased.
            code = QRcode_encodeString(text, 0, correction.qrencode, QR_MODE_8, 1)
        }
        guard let code else {
            let error = errno
            if error == ERANGE { throw QRCodeError.tooLong(bytes: bytes.count, correction: correction) }
            throw QRCodeError.encodingFailed(errno: error)
        }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        size = width
        // Bit 0 of each byte is the module's colour; the other bits say which function pattern it belongs to.
        let data = UnsafeBufferPointer(start: code.pointee.data, count: width * width)
        modules = data.map { $0 & 1 == 1 }
    }

    /// Whether the module at column `x`, row `y` is dark. Coordinates outside the symbol are light, as
    /// the quiet zone is, so renderers can walk the border with the same call.
    public func isDark(x: Int, y: Int) -> Bool {
        guard x >= 0, y >= 0, x < size, y < size else { return false }
        return modules[y * size + x]
    }
}
