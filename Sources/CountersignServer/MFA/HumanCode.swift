import Foundation

/// Codes that people read and type: pairing keys, authentication codes, recovery codes (docs/PROTOCOL.md
/// §3). 31 symbols without the ones misread for each other (0/O, 1/I/L).
enum HumanCode {
    static let alphabet = Array("23456789ABCDEFGHJKMNPQRSTUVWXYZ")

    /// `length` symbols drawn uniformly: bytes at or above the largest multiple of 31 are thrown away
    /// rather than folded in, which would favour the first symbols.
    static func generate(length: Int, random: any RandomSource) -> String {
        let limit = UInt8(256 - 256 % alphabet.count)  // 248
        var out: [Character] = []
        out.reserveCapacity(length)
        while out.count < length {
            for b in random.bytes(length - out.count + 4) where b < limit && out.count < length {
                out.append(alphabet[Int(b) % alphabet.count])
            }
        }
        return String(out)
    }

    /// The canonical form of what someone typed: upper case, spaces and dashes dropped; nil unless it is
    /// exactly `length` symbols of the alphabet.
    static func normalize(_ text: String, length: Int) -> String? {
        var out: [Character] = []
        for c in text.uppercased() where c != " " && c != "-" {
            guard alphabet.contains(c), out.count < length else { return nil }
            out.append(c)
        }
        return out.count == length ? String(out) : nil
    }

    /// A code given bare or inside a URI, as PingOne's `authenticate(authCode)` takes it: the value of the
    /// query item `name` of any URI (`countersign://auth?authentication_code=…`, `https://…?…`).
    static func extract(_ input: String, queryItem name: String, length: Int) -> String? {
        let trimmed = input.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.contains("?") || trimmed.contains("://") {
            guard let items = URLComponents(string: trimmed)?.queryItems,
                let value = items.first(where: { $0.name == name })?.value
            else { return nil }
            return normalize(value, length: length)
        }
        return normalize(trimmed, length: length)
    }

    /// Groups for display: `ABCD-EFGH-JKMN`.
    static func grouped(_ code: String, by size: Int) -> String {
        stride(from: 0, to: code.count, by: size).map { i in
            let start = code.index(code.startIndex, offsetBy: i)
            return String(code[start..<code.index(start, offsetBy: min(size, code.count - i))])
        }.joined(separator: "-")
    }
}
