import Foundation

/// How both sides put the wire types into JSON: ISO 8601 dates, sorted keys (stable bodies for tests and
/// caches), and unpadded base64url for bytes (keys, signatures, envelopes).
public enum APICoding {
    public static func encoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.dateEncodingStrategy = .iso8601
        e.outputFormatting = [.sortedKeys]
        return e
    }

    public static func decoder() -> JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .iso8601
        return d
    }
}

/// Bytes as unpadded base64url text (RFC 4648 §5), the one form every byte field of the API uses.
public struct Base64URL: Codable, Hashable, Sendable, CustomStringConvertible {
    public var bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Nil unless `text` is canonical unpadded base64url: no padding, no other characters, zero spare bits.
    public init?(text: String) {
        guard text.utf8.allSatisfy({ Self.alphabet.contains($0) }), text.utf8.count % 4 != 1 else { return nil }
        var b64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        b64 += String(repeating: "=", count: (4 - b64.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: b64) else { return nil }
        bytes = Array(data)
        guard self.text == text else { return nil }
    }

    public var text: String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    public var description: String { text }

    static let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

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
