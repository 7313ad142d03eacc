/// A small DEFLATE (RFC 1951) compressor for bitmaps: one block with the fixed Huffman codes, and
/// matches only one byte back (runs within a row) or one row back (the `scale` copies of each row of
/// modules). That finds nearly all the redundancy a QR code image has, a version 40 code at scale 4
/// shrinks from about 70 KB to a few KB, without zlib, which Foundation on Linux does not expose.
enum Deflate {
    static func compress(_ data: [UInt8], rowStride: Int) -> [UInt8] {
        var bits = BitWriter()
        bits.write(1, count: 1)  // BFINAL
        bits.write(1, count: 2)  // BTYPE 01: fixed Huffman codes
        var i = 0
        while i < data.count {
            var bestLength = 0
            var bestDistance = 0
            for distance in [1, rowStride] where distance >= 1 && distance <= min(i, 32_768) {
                var length = 0
                while length < 258, i + length < data.count, data[i + length] == data[i + length - distance] {
                    length += 1
                }
                if length > bestLength { (bestLength, bestDistance) = (length, distance) }
            }
            if bestLength >= 3 {
                bits.writeLength(bestLength)
                bits.writeDistance(bestDistance)
                i += bestLength
            } else {
                bits.writeLiteral(Int(data[i]))
                i += 1
            }
        }
        bits.writeLiteral(256)  // end of block
        return bits.finish()
    }

    static let lengthBases = [
        3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227,
        258,
    ]
    static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    static let distanceBases = [
        1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
        2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
    ]
    static let distanceExtra = [
        0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13,
    ]

    struct BitWriter {
        var bytes: [UInt8] = []
        var buffer: UInt32 = 0
        var used = 0

        /// The low `count` bits of `value`, least significant first (how DEFLATE packs everything but
        /// Huffman codes).
        mutating func write(_ value: Int, count: Int) {
            buffer |= UInt32(value) << UInt32(used)
            used += count
            while used >= 8 {
                bytes.append(UInt8(buffer & 0xFF))
                buffer >>= 8
                used -= 8
            }
        }

        /// Huffman codes go most significant bit first.
        mutating func writeCode(_ code: Int, count: Int) {
            var reversed = 0
            for k in 0..<count where code & (1 << k) != 0 { reversed |= 1 << (count - 1 - k) }
            write(reversed, count: count)
        }

        mutating func writeLiteral(_ symbol: Int) {
            switch symbol {
            case 0...143: writeCode(0x30 + symbol, count: 8)
            case 144...255: writeCode(0x190 + symbol - 144, count: 9)
            case 256...279: writeCode(symbol - 256, count: 7)
            default: writeCode(0xC0 + symbol - 280, count: 8)
            }
        }

        mutating func writeLength(_ length: Int) {
            let index = Deflate.lengthBases.lastIndex { $0 <= length }!
            writeLiteral(257 + index)
            write(length - Deflate.lengthBases[index], count: Deflate.lengthExtra[index])
        }

        mutating func writeDistance(_ distance: Int) {
            let index = Deflate.distanceBases.lastIndex { $0 <= distance }!
            writeCode(index, count: 5)
            write(distance - Deflate.distanceBases[index], count: Deflate.distanceExtra[index])
        }

        mutating func finish() -> [UInt8] {
            if used > 0 { bytes.append(UInt8(buffer & 0xFF)) }
            return bytes
        }
    }
}
