/// What a name someone else will read may hold (device and passkey names; usernames are ASCII already):
/// no control characters, and none that are invisible or reorder text (issue 33: U+202E made "evil" read
/// "live"). UTS #39's restriction levels and RFC 8265's PRECIS classes refuse the same kinds: bidi
/// controls, format characters (Cf: zero-width joiners, word joiners, tags), default-ignorable code
/// points, line and paragraph separators, private-use, surrogate and unassigned code points.
///
/// And no word that mixes the scripts whose letters pass for each other (Latin, Greek, Cyrillic, Armenian,
/// Cherokee, Lisu, Coptic): "pаypal" with a Cyrillic "а" reads as another name. UTS #39's moderately restrictive level
/// refuses such mixes; Latin beside Han, kana, Arabic or any other script stays ("東京のPC"). A name wholly
/// in one script that looks like a word of another (all-Cyrillic "рау") needs UTS #39's confusables table,
/// which is not used here.
enum ShownName {
    static let rule =
        "1 to 64 characters, none of them control, format, bidirectional or invisible characters, "
        + "and no word mixing Latin, Greek, Cyrillic or other look-alike letters"

    /// Whether every character of `text` may be shown. A zero-width joiner or a variation selector right
    /// after an emoji builds the emoji (a family, a red heart), so there it is kept.
    static func isShowable(_ text: String) -> Bool { problem(text) == nil }

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
    enum LookAlikeScript: String, CustomStringConvertible {
        case latin = "Latin"
        case greek = "Greek"
        case cyrillic = "Cyrillic"
        case armenian = "Armenian"
        case cherokee = "Cherokee"
        case lisu = "Lisu"
        case coptic = "Coptic"
        var description: String { rawValue }
    }

    static func lookAlikeScript(_ scalar: Unicode.Scalar) -> LookAlikeScript? {
        guard scalar.properties.isAlphabetic else { return nil }
        switch scalar.value {
        // Latin, IPA, phonetic and letterlike letters, Latin Extended-C to -E, fullwidth and mathematical
        // letters (𝖺, the Kelvin sign K): all pass for Latin.
        case 0x41...0x5A, 0x61...0x7A, 0xAA, 0xBA, 0xC0...0x2AF, 0x1D00...0x1DBF, 0x1E00...0x1EFF, 0x2100...0x214F,
            0x2C60...0x2C7F, 0xA720...0xA7FF, 0xAB30...0xAB6F, 0xFF21...0xFF3A, 0xFF41...0xFF5A, 0x1D400...0x1D7FF:
            return .latin
        case 0x370...0x3FF, 0x1F00...0x1FFF: return .greek
        case 0x400...0x52F, 0x1C80...0x1C8F, 0x2DE0...0x2DFF, 0xA640...0xA69F: return .cyrillic
        case 0x530...0x58F: return .armenian
        case 0x13A0...0x13FF, 0xAB70...0xABBF: return .cherokee
        case 0xA4D0...0xA4FF: return .lisu
        case 0x2C80...0x2CFF: return .coptic
        default: return nil
        }
    }

    /// True when one word holds letters of two look-alike scripts.
    static func mixesLookAlikeScripts(_ text: String) -> Bool { mixedWord(text) != nil }

    /// The first word holding letters of two look-alike scripts: its letters, the first script seen, and
    /// the letter of another. Words end only at ASCII spaces, digits and punctuation: a thin or hair space
    /// between "p" and a Cyrillic "а" does not make two words.
    static func mixedWord(_ text: String) -> (word: String, first: LookAlikeScript, letter: Unicode.Scalar)? {
        var first: LookAlikeScript?
        var odd: Unicode.Scalar?
        var word = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let p = scalar.properties
            guard p.isAlphabetic || p.generalCategory == .nonspacingMark else {
                if scalar.isASCII {
                    if let first, let odd { return (String(word), first, odd) }
                    (first, odd, word) = (nil, nil, String.UnicodeScalarView())
                }
                continue
            }
            word.append(scalar)
            guard let script = lookAlikeScript(scalar) else { continue }
            if first == nil { first = script } else if script != first, odd == nil { odd = scalar }
        }
        if let first, let odd { return (String(word), first, odd) }
        return nil
    }

    /// What is wrong with `text` as a shown name, in words a person can act on; nil when nothing is.
    static func problem(_ text: String) -> String? {
        var previous: Unicode.Scalar?
        for scalar in text.unicodeScalars {
            let emojiPart =
                (scalar.value == 0x200D || (0xFE0E...0xFE0F).contains(scalar.value))
                && (previous?.properties.isEmoji == true
                    || previous.map { (0xFE0E...0xFE0F).contains($0.value) } == true)
            if !emojiPart, !isShowable(scalar) {
                return "it holds \(code(scalar)), a control, invisible or direction-changing character; remove it"
            }
            previous = scalar
        }
        if let (word, first, letter) = mixedWord(text), let other = lookAlikeScript(letter) {
            return """
                "\(word)" mixes \(first) and \(other) letters (\(code(letter)) is \(other)), as look-alike names do; \
                type each word in one alphabet
                """
        }
        return nil
    }

    static func code(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}
