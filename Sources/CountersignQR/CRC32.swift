/// CRC-32 (ISO-HDLC, the polynomial PNG and zip use), written here because Foundation on Linux has no
/// zlib to borrow it from.
enum CRC32 {
    static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func checksum<S: Sequence>(_ bytes: S, from start: UInt32 = 0) -> UInt32 where S.Element == UInt8 {
        var c = ~start
        for b in bytes { c = table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return ~c
    }
}
