/// RFC 3986 percent-encoding, as Foundation's `addingPercentEncoding` and `removingPercentEncoding` do it for
/// the otpauth label, without Foundation's locale and ICU tables (CountersignCrypto uses FoundationEssentials).
enum PercentEncoding {
    /// Every UTF-8 byte of `text` outside `allowed` (ASCII) as `%XX`, upper-case hex.
    static func encode(_ text: String, allowing allowed: Set<UInt8>) -> String {
        var out = ""
        for byte in text.utf8 {
            if allowed.contains(byte) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%" + String(hexDigits[Int(byte >> 4)]) + String(hexDigits[Int(byte & 0x0F)])
            }
        }
        return out
    }

    /// `text` with each `%XX` replaced by its byte; nil for a `%` not followed by two hex digits, or bytes
    /// that are not UTF-8 (where Foundation sometimes substitutes U+FFFD).
    static func decode(_ text: some StringProtocol) -> String? {
        var bytes: [UInt8] = []
        var utf8 = text.utf8.makeIterator()
        while let byte = utf8.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = utf8.next().flatMap(hexValue), let low = utf8.next().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// RFC 3986's unreserved characters (letters, digits, `-._~`) and `:` and `@`, as the otpauth label keeps them.
    static let labelCharacters = Set(
        Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:@".utf8)
    )

    private static let hexDigits = Array("0123456789ABCDEF")

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension StringProtocol {
    /// Without the leading and trailing white space Foundation's `trimmingCharacters(in: .whitespaces)` removes
    /// (tab and the space separators), or with `newlines` its `.whitespacesAndNewlines` (also U+000A–U+000D,
    /// U+0085, U+2028 and U+2029).
    func trimmingSpaces(newlines: Bool = false) -> String {
        func isSpace(_ s: Unicode.Scalar) -> Bool {
            if s == "\t" || s.properties.generalCategory == .spaceSeparator { return true }
            return newlines && ((0x0A...0x0D).contains(s.value) || [0x85, 0x2028, 0x2029].contains(s.value))
        }
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = scalars.lastIndex(where: { !isSpace($0) })!
        var out = String.UnicodeScalarView()
        out.append(contentsOf: scalars[first...last])
        return String(out)
    }
}
