extension QRCode {
    /// The symbol and its quiet zone as `scale`-pixel modules, one packed row per pixel row (most
    /// significant bit first, the last byte padded with 0), the layout both PBM and 1-bit PNG use. A
    /// set bit means dark when `darkIsOne`, light otherwise: PBM's 1 is black, PNG's 1 is white.
    func bitmapRows(scale: Int, darkIsOne: Bool) -> (pixels: Int, rows: [[UInt8]]) {
        precondition(scale >= 1, "scale must be at least 1 pixel per module")
        let q = Self.quietZone
        let pixels = (size + 2 * q) * scale
        let rowBytes = (pixels + 7) / 8
        var rows: [[UInt8]] = []
        rows.reserveCapacity(pixels)
        for y in -q..<(size + q) {
            var row = [UInt8](repeating: 0, count: rowBytes)
            for x in -q..<(size + q) where isDark(x: x, y: y) == darkIsOne {
                for p in ((x + q) * scale)..<((x + q + 1) * scale) {
                    row[p >> 3] |= 0x80 >> UInt8(p & 7)
                }
            }
            rows.append(contentsOf: repeatElement(row, count: scale))
        }
        return (pixels, rows)
    }
}
