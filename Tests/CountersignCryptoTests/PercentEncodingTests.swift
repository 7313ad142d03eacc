import CountersignTestSupport
import Foundation
import Testing

@testable import CountersignCrypto

/// CountersignCrypto's own percent-encoding and trimming (it uses FoundationEssentials, which has neither)
/// against Foundation's, on the same random strings: the otpauth label and PEM lines read as before.
@Suite struct PercentEncodingTests {
    /// Letters, digits, the label's punctuation, `%` and hex, spaces of every kind, newlines and non-ASCII.
    static let alphabet: [Character] = Array(
        "aZ09-._~:@%%%fFeE9 \t\n\r/?#&=+\u{A0}\u{2003}\u{85}\u{2028}\u{1680}é日🔑\u{301}"
    )

    static func strings(_ count: Int) -> [String] {
        var rng = SplitMix(seed: 0x5EED_0F_0A7)
        return (0..<count).map { _ in
            String((0..<Int.random(in: 0...12, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
        }
    }

    @Test func encodingMatchesFoundation() {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~:@"))
        for s in Self.strings(5000) {
            #expect(
                PercentEncoding.encode(s, allowing: PercentEncoding.labelCharacters)
                    == s.addingPercentEncoding(withAllowedCharacters: allowed),
                "\(s.debugDescription)"
            )
        }
    }

    @Test func decodingMatchesFoundation() {
        for s in Self.strings(5000) + ["%C3%A9", "%e9", "%", "%4", "%G0", "a%20b", "%F0%9F%94%91", "%00", "%ED%A0%80"] {
            let foundation = s.removingPercentEncoding
            if let foundation, foundation.contains("\u{FFFD}"), !s.contains("\u{FFFD}") {
                // Foundation sometimes puts U+FFFD for bytes that are not UTF-8 (and sometimes answers nil):
                // here such a label is always refused.
                #expect(PercentEncoding.decode(s) == nil, "\(s.debugDescription)")
            } else {
                #expect(PercentEncoding.decode(s) == foundation, "\(s.debugDescription)")
            }
        }
    }

    @Test func trimmingMatchesFoundation() {
        for s in Self.strings(5000) {
            #expect(s.trimmingSpaces() == s.trimmingCharacters(in: .whitespaces), "\(s.debugDescription)")
            #expect(
                s.trimmingSpaces(newlines: true) == s.trimmingCharacters(in: .whitespacesAndNewlines),
                "\(s.debugDescription)"
            )
        }
    }
}
