/// Adler-32, the checksum that ends a zlib stream (RFC 1950).
enum Adler32 {
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1
        var b: UInt32 = 0
        // 5552 is the most bytes before b can overflow 32 bits, so the modulo is taken once per chunk.
        var i = 0
        while i < bytes.count {
            let end = min(i + 5552, bytes.count)
            while i < end {
                a &+= UInt32(bytes[i])
                b &+= a
                i += 1
            }
            a %= 65521
            b %= 65521
        }
        return b << 16 | a
    }
}
