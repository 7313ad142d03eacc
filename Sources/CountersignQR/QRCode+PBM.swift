extension QRCode {
    /// A binary PBM (P4) image of the code, quiet zone included, `scale` pixels per module: the simplest
    /// format that zbarimg, ImageMagick and netpbm read, for tools and tests.
    public func pbm(scale: Int = 4) -> [UInt8] {
        let (pixels, rows) = bitmapRows(scale: scale, darkIsOne: true)
        var out = Array("P4\n\(pixels) \(pixels)\n".utf8)
        out.reserveCapacity(out.count + rows.count * (rows.first?.count ?? 0))
        for row in rows { out += row }
        return out
    }
}
