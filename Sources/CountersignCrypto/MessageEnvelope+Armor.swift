#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension MessageEnvelope {
    static let armorBegin = "-----BEGIN COUNTERSIGN MESSAGE-----"
    static let armorEnd = "-----END COUNTERSIGN MESSAGE-----"
    static let armorColumns = 64
    /// The longest armored envelope: base64 of the largest envelope, a newline per line, and both armor lines.
    public static let maxArmoredSize: Int = {
        let b64 = (maxSize + 2) / 3 * 4
        return b64 + (b64 + armorColumns - 1) / armorColumns + armorBegin.utf8.count + armorEnd.utf8.count + 2
    }()

    /// The text form (docs/SPEC.md §8.3), ending in a newline.
    public var armored: String {
        let b64 = Data(bytes).base64EncodedString()
        var out = Self.armorBegin + "\n"
        var i = b64.startIndex
        while i < b64.endIndex {
            let j = b64.index(i, offsetBy: Self.armorColumns, limitedBy: b64.endIndex) ?? b64.endIndex
            out += b64[i..<j] + "\n"
            i = j
        }
        return out + Self.armorEnd + "\n"
    }

    /// Parses the text form strictly: whitespace may surround it, nothing inside may differ from what
    /// `armored` writes. Works on bytes: Swift's Characters would merge CR LF and hide it.
    public init(armored text: String) throws {
        guard text.utf8.count <= Self.maxArmoredSize + 4096 else { throw MessageError.tooLarge(limit: Self.maxSize) }
        let space: Set<UInt8> = [0x20, 0x09, 0x0D, 0x0A]
        var bytes = Array(text.utf8)[...]
        while let b = bytes.first, space.contains(b) { bytes.removeFirst() }
        while let b = bytes.last, space.contains(b) { bytes.removeLast() }
        let begin = Array(Self.armorBegin.utf8)
        let end = Array(Self.armorEnd.utf8)
        guard bytes.starts(with: begin) else { throw MessageError.unknownFormat }
        guard !bytes.contains(0x0D) else { throw MessageError.malformed("CRLF line endings; the armor uses LF only") }
        let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
        guard lines.first.map(Array.init) == begin else {
            throw MessageError.malformed("text after \(Self.armorBegin) on its line")
        }
        guard lines.count >= 2, lines.last.map(Array.init) == end else {
            throw MessageError.malformed("missing or damaged \(Self.armorEnd) line")
        }
        let body = lines.dropFirst().dropLast()
        guard !body.isEmpty else { throw MessageError.malformed("no base64 between the armor lines") }
        var b64 = [UInt8]()
        for (i, line) in body.enumerated() {
            let isLast = i == body.count - 1
            guard isLast ? (1...Self.armorColumns).contains(line.count) : line.count == Self.armorColumns else {
                throw MessageError.malformed(
                    "armor line \(i + 2) is \(line.count) characters; lines hold exactly \(Self.armorColumns) but the last"
                )
            }
            b64 += line
        }
        let encoded = String(decoding: b64, as: UTF8.self)
        guard let data = Data(base64Encoded: encoded), data.base64EncodedString() == encoded else {
            throw MessageError.malformed("the armor is not canonical standard base64")
        }
        try self.init(bytes: Array(data))
    }
}
