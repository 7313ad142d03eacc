extension QRCode {
    /// The code as text for a terminal, two modules per character (upper and lower half block), quiet
    /// zone included, lines joined by "\n" with one at the end.
    ///
    /// A terminal draws glyphs in its foreground colour on its background colour, so which of the two
    /// reads as "dark" depends on the terminal:
    /// - `invert: false` (the default) is for a terminal with a **dark background** and light text: the
    ///   glyphs draw the light modules and the quiet zone, and the dark modules are left as background.
    /// - `invert: true` is for a terminal with a **light background** and dark text: the glyphs draw the
    ///   dark modules.
    /// Either way the printed code is dark-on-light, which is what every scanner reads; a code printed
    /// the wrong way round comes out as a negative that many scanners reject.
    public func terminal(invert: Bool = false) -> String {
        let q = Self.quietZone
        let span = size + 2 * q
        var out = ""
        out.unicodeScalars.reserveCapacity((span + 1) * (span + 1) / 2)
        // The symbol plus quiet zone is an odd number of modules high, so the last line's lower half is
        // one more row of quiet zone (isDark is false outside the symbol).
        for top in stride(from: -q, to: size + q, by: 2) {
            for x in -q..<(size + q) {
                // "Ink" is what the glyph draws: light modules by default, dark ones when inverted.
                let upper = isDark(x: x, y: top) == invert
                let lower = isDark(x: x, y: top + 1) == invert
                switch (upper, lower) {
                case (true, true): out.unicodeScalars.append("\u{2588}")  // █
                case (true, false): out.unicodeScalars.append("\u{2580}")  // ▀
                case (false, true): out.unicodeScalars.append("\u{2584}")  // ▄
                case (false, false): out.unicodeScalars.append(" ")
                }
            }
            out.unicodeScalars.append("\n")
        }
        return out
    }
}
