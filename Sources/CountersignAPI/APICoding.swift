#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How both sides put the wire types into JSON: RFC 3339 dates with milliseconds (`WireDate`), sorted keys (stable bodies for tests and
/// caches), and unpadded base64url for bytes (keys, signatures, envelopes).
public enum APICoding {
    public static func encoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            try c.encode(WireDate.format(date))
        }
        e.outputFormatting = [.sortedKeys]
        return e
    }

    public static func decoder() -> JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .custom { decoder in
            let c = try decoder.singleValueContainer()
            let text = try c.decode(String.self)
            guard let date = WireDate.parse(text) else {
                throw DecodingError.dataCorruptedError(
                    in: c,
                    debugDescription: "not an RFC 3339 date-time such as 2026-11-26T04:52:06.123Z"
                )
            }
            return date
        }
        return d
    }
}

/// Bytes as unpadded base64url text (RFC 4648 §5), the one form every byte field of the API uses.
public struct Base64URL: Codable, Hashable, Sendable, CustomStringConvertible {
    public var bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Nil unless `text` is canonical unpadded base64url: no padding, no other characters, zero spare bits.
    public init?(text: String) {
        let decoded = text.utf8.withContiguousStorageIfAvailable { Self.decode($0) } ?? Self.decode(Array(text.utf8))
        guard let decoded else { return nil }
        bytes = decoded
    }

    /// Byte-level, one pass: these fields carry whole envelopes (up to 1.4 MB of text), and Foundation's
    /// string replacement and re-encoding cost more than everything else a request does.
    private static func decode<C: Collection>(_ input: C) -> [UInt8]? where C.Element == UInt8 {
        let n = input.count
        guard n % 4 != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(n * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        for c in input {
            let v = table[Int(c)]
            guard v != 0xFF else { return nil }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
            }
        }
        // Canonical: the bits left over after the last whole byte must be zero.
        guard acc & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }

    private static let table: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabetBytes.enumerated() { t[Int(c)] = UInt8(i) }
        return t
    }()

    static let alphabetBytes = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public var text: String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var i = 0
        let a = Self.alphabetBytes
        while i + 3 <= bytes.count {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [a[Int(v >> 18 & 63)], a[Int(v >> 12 & 63)], a[Int(v >> 6 & 63)], a[Int(v & 63)]]
            i += 3
        }
        switch bytes.count - i {
        case 1:
            let v = UInt32(bytes[i]) << 16
            out += [a[Int(v >> 18 & 63)], a[Int(v >> 12 & 63)]]
        case 2:
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [a[Int(v >> 18 & 63)], a[Int(v >> 12 & 63)], a[Int(v >> 6 & 63)]]
        default:
            break
        }
        return String(decoding: out, as: UTF8.self)
    }

    public var description: String { text }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let text = try c.decode(String.self)
        guard let v = Base64URL(text: text) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "not canonical unpadded base64url")
        }
        self = v
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(text)
    }
}
