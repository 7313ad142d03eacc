/// RFC 4648 base32, as otpauth:// secrets use it: written unpadded in upper case, read case-insensitively
/// with optional padding and spaces (authenticator apps show secrets in groups).
public enum Base32 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        var buffer = 0, bits = 0
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
        var chars = Array(text.uppercased().utf8.filter { $0 != UInt8(ascii: " ") })
        while chars.last == UInt8(ascii: "=") { chars.removeLast() }
        var out = [UInt8]()
        var buffer = 0, bits = 0
        for c in chars {
            guard let v = alphabet.firstIndex(of: c) else { return nil }
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
