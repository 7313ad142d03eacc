/// What a name someone else will read may hold (device and passkey names; usernames are ASCII already):
/// no control characters, and none that are invisible or reorder text (issue 33: U+202E made "evil" read
/// "live"). UTS #39's restriction levels and RFC 8265's PRECIS classes refuse the same kinds: bidi
/// controls, format characters (Cf: zero-width joiners, word joiners, tags), default-ignorable code
/// points, line and paragraph separators, private-use, surrogate and unassigned code points.
///
/// And no word that mixes the scripts whose letters pass for each other (Latin, Greek, Cyrillic, Armenian,
/// Cherokee): "pаypal" with a Cyrillic "а" reads as another name. UTS #39's moderately restrictive level
/// refuses such mixes; Latin beside Han, kana, Arabic or any other script stays ("東京のPC"). A name wholly
/// in one script that looks like a word of another (all-Cyrillic "рау") needs UTS #39's confusables table,
/// which is not used here.
enum ShownName {
    static let rule =
        "1 to 64 characters, none of them control, format, bidirectional or invisible characters, "
        + "and no word mixing Latin, Greek, Cyrillic, Armenian or Cherokee letters (look-alikes)"

    /// Whether every character of `text` may be shown. A zero-width joiner or a variation selector right
    /// after an emoji builds the emoji (a family, a red heart), so there it is kept.
    static func isShowable(_ text: String) -> Bool {
        guard !mixesLookAlikeScripts(text) else { return false }
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

    /// The scripts whose letters are confused with one another, by code point block.
    enum LookAlikeScript { case latin, greek, cyrillic, armenian, cherokee }

    static func lookAlikeScript(_ scalar: Unicode.Scalar) -> LookAlikeScript? {
        guard scalar.properties.isAlphabetic else { return nil }
        switch scalar.value {
        case 0x41...0x5A, 0x61...0x7A, 0xAA, 0xBA, 0xC0...0x24F, 0x1D00...0x1D7F, 0x1E00...0x1EFF, 0xA720...0xA7FF,
            0xFF21...0xFF3A, 0xFF41...0xFF5A:
            return .latin
        case 0x370...0x3FF, 0x1F00...0x1FFF: return .greek
        case 0x400...0x52F, 0x1C80...0x1C8F, 0x2DE0...0x2DFF, 0xA640...0xA69F: return .cyrillic
        case 0x530...0x58F: return .armenian
        case 0x13A0...0x13FF, 0xAB70...0xABBF: return .cherokee
        default: return nil
        }
    }

    /// True when one word (a run of letters and marks) holds letters of two look-alike scripts.
    static func mixesLookAlikeScripts(_ text: String) -> Bool {
        var word: Set<LookAlikeScript> = []
        for scalar in text.unicodeScalars {
            let p = scalar.properties
            guard p.isAlphabetic || p.generalCategory == .nonspacingMark else {
                word = []
                continue
            }
            if let script = lookAlikeScript(scalar) {
                word.insert(script)
                if word.count > 1 { return true }
            }
        }
        return false
    }
}
