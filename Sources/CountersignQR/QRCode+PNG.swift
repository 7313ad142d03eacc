extension QRCode {
    /// A PNG image of the code (1-bit greyscale), quiet zone included, `scale` pixels per module, for
    /// browsers and anything else that shows images.
    public func png(scale: Int = 4) -> [UInt8] {
        let (pixels, rows) = bitmapRows(scale: scale, darkIsOne: false)
        return PNG.grayscale1Bit(width: pixels, height: pixels, rows: rows)
    }
}
