import Foundation
import Testing

@testable import CountersignServer

/// Issue 33: names other people read (devices, passkeys) hold nothing that is invisible or reorders the
/// text around it; emoji built with joiners and selectors stay.
@Suite struct ShownNameTests {
    @Test func bidiControlsAndInvisibleCharactersAreRefused() throws {
        for bad in [
            "\u{202E}evil", "Phone\u{202E}gnp.exe", "a\u{200B}b", "a\u{2066}b\u{2069}", "a\u{200F}",
            "zero\u{FEFF}width",
            "tag\u{E0041}", "line\u{2028}sep", "soft\u{00AD}hyphen", "a\u{200D}b", "private\u{E000}", "x\u{061C}",
            "bell\u{7}",
        ] {
            #expect(throws: RequestError.self, "\(bad.unicodeScalars.map { String($0.value, radix: 16) })") {
                _ = try DeviceName(parsing: bad)
            }
            #expect(throws: PasskeyError.invalidName) { _ = try PasskeyService.validName(bad) }
        }
        for good in ["Laptop", "Zoë's phone", "علي", "東京のPC", "👨‍👩‍👧 iPad", "❤️ tablet", "🏳️‍🌈", "Work key (YubiKey 5)"] {
            #expect(try DeviceName(parsing: good).text == good)
            #expect(try PasskeyService.validName(good) == good)
        }
    }

    /// UTS #39's mixed-script test: a word whose letters come from two scripts that pass for each other
    /// ("pаypal" with a Cyrillic "а", "Αlice" with a Greek capital alpha) is refused; each script alone, and
    /// Latin beside scripts that do not look like it, stay.
    @Test func wordsMixingLookAlikeScriptsAreRefused() throws {
        for bad in [
            "p\u{430}ypal", "\u{391}lice's phone", "My l\u{430}ptop", "\u{0570}ome", "Ye\u{13A5}",
            // Review: a hair space does not split a word; Lisu, Coptic and mathematical letters count.
            "p\u{200A}\u{430}\u{200A}ypal", "\u{A4EE}lice's phone", "\u{1D5BA}\u{0440}", "t\u{2C9F}p",
        ] {
            #expect(throws: RequestError.self, "\(bad)") { _ = try DeviceName(parsing: bad) }
            #expect(throws: PasskeyError.invalidName, "\(bad)") { _ = try PasskeyService.validName(bad) }
        }
        for good in [
            "Телефон Алисы", "Ελένη's tablet", "Laptop Алисы", "Ｐhone", "東京のPC", "Zoë", "Café ñ", "iPad Air 2",
            "Ноутбук-2",
        ] {
            #expect(try DeviceName(parsing: good).text == good, "\(good)")
        }
    }

    /// A refused device name says what is wrong: the word and the letter, or the hidden character.
    @Test func aRefusalNamesTheWordAndTheLetter() throws {
        func reason(_ name: String) -> String {
            do {
                _ = try DeviceName(parsing: name)
            } catch RequestError.invalidField(field: "name", let reason) {
                return reason
            } catch {}
            return "not refused as the name"
        }
        let mixed = reason("My p\u{430}ypal laptop")
        #expect(mixed.hasPrefix("\"p\u{430}ypal\" mixes Latin and Cyrillic letters (U+0430 is Cyrillic)"), "\(mixed)")
        let hidden = reason("Phone\u{202E}gnp.exe")
        #expect(hidden.hasPrefix("it holds U+202E"), "\(hidden)")
    }
}
