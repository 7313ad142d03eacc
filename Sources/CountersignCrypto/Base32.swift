/// RFC 4648 base32, as otpauth:// secrets use it: written unpadded in upper case, read case-insensitively
/// with optional padding and spaces (authenticator apps show secrets in groups).
public enum Base32 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        var buffer = 0
        var bits = 0
        for b in bytes {
            buffer = buffer << 8 | Int(b)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[(buffer >> (bits - 5)) & 31])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[(buffer << (5 - bits)) & 31]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// nil for a character outside the alphabet, misplaced padding, or leftover bits that are not zero.
    public static func decode(_ text: String) -> [UInt8]? {
        var out = [UInt8]()
        var buffer = 0
        var bits = 0
        var padded = false
        // Byte by byte and ASCII only: Unicode case mapping would read "ß" as "SS" or "ı" as "I" and so
        // accept a secret other than the one written.
        for c in text.utf8 {
            let v: Int
            switch c {
            case UInt8(ascii: " "): continue
            case UInt8(ascii: "="):
                padded = true
                continue
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = Int(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): v = Int(c - UInt8(ascii: "a"))
            case UInt8(ascii: "2")...UInt8(ascii: "7"): v = Int(c - UInt8(ascii: "2")) + 26
            default: return nil
            }
            guard !padded else { return nil }
            buffer = (buffer << 5 | v) & 0xffff
            bits += 5
            if bits >= 8 {
                out.append(UInt8((buffer >> (bits - 8)) & 0xff))
                bits -= 8
            }
        }
        guard bits < 5, buffer & ((1 << bits) - 1) == 0 else { return nil }
        return out
    }
}
