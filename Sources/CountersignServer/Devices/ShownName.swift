/// What a name someone else will read may hold (device and passkey names; usernames are ASCII already):
/// no control characters, and none that are invisible or reorder text (issue 33: U+202E made "evil" read
/// "live"). UTS #39's restriction levels and RFC 8265's PRECIS classes refuse the same kinds: bidi
/// controls, format characters (Cf: zero-width joiners, word joiners, tags), default-ignorable code
/// points, line and paragraph separators, private-use, surrogate and unassigned code points.
enum ShownName {
    static let rule = "1 to 64 characters, none of them control, format, bidirectional or invisible characters"

    /// Whether every character of `text` may be shown. A zero-width joiner or a variation selector right
    /// after an emoji builds the emoji (a family, a red heart), so there it is kept.
    static func isShowable(_ text: String) -> Bool {
        var previous: Unicode.Scalar?
        for scalar in text.unicodeScalars {
            let emojiPart =
                (scalar.value == 0x200D || (0xFE0E...0xFE0F).contains(scalar.value))
                && (previous?.properties.isEmoji == true
                    || previous.map { (0xFE0E...0xFE0F).contains($0.value) } == true)
            guard emojiPart || isShowable(scalar) else { return false }
            previous = scalar
        }
        return true
    }

    static func isShowable(_ scalar: Unicode.Scalar) -> Bool {
        let p = scalar.properties
        if p.isBidiControl || p.isDefaultIgnorableCodePoint || p.isJoinControl { return false }
        switch p.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .privateUse, .surrogate, .unassigned:
            return false
        default:
            return true
        }
    }
}
