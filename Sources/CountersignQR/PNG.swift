/// A minimal PNG writer for 1-bit images: one IHDR, one IDAT (zlib around our own `Deflate`), IEND.
enum PNG {
    static func grayscale1Bit(width: Int, height: Int, rows: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var header = bigEndian(UInt32(width)) + bigEndian(UInt32(height))
        header += [1, 0, 0, 0, 0]  // bit depth 1, greyscale, deflate, adaptive filtering, no interlace
        chunk("IHDR", header, into: &out)
        var raw: [UInt8] = []
        raw.reserveCapacity(rows.count * ((rows.first?.count ?? 0) + 1))
        for row in rows {
            raw.append(0)  // filter type None: Deflate's row-back matches already do what filter Up would
            raw += row
        }
        chunk("IDAT", zlib(raw, rowStride: (rows.first?.count ?? 0) + 1), into: &out)
        chunk("IEND", [], into: &out)
        return out
    }

    static func chunk(_ type: String, _ data: [UInt8], into out: inout [UInt8]) {
        let typeBytes = Array(type.utf8)
        out += bigEndian(UInt32(data.count))
        out += typeBytes
        out += data
        out += bigEndian(CRC32.checksum(typeBytes + data))
    }

    /// RFC 1950: a two-byte header, the deflate stream, and the Adler-32 of the uncompressed bytes.
    static func zlib(_ data: [UInt8], rowStride: Int) -> [UInt8] {
        // Deflate, 32 KiB window, no dictionary; 0x7801 is a multiple of 31, as the header check requires.
        [0x78, 0x01] + Deflate.compress(data, rowStride: rowStride) + bigEndian(Adler32.checksum(data))
    }

    static func bigEndian(_ v: UInt32) -> [UInt8] {
        [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
    }
}
