import Testing

@testable import CountersignServer

/// The server's randomness (tokens, IDs, salts): every length filled, never twice the same, and no byte
/// value missing or favoured over 64 KiB.
@Suite(.closesStorage) struct RandomSourceTests {
    @Test func everyLengthIsFilledWithFreshBytes() {
        let source = SystemRandomSource()
        #expect(source.bytes(0).isEmpty)
        for n in [1, 7, 8, 9, 32, 33, 255, 256, 257, 4096] {
            let a = source.bytes(n)
            let b = source.bytes(n)
            #expect(a.count == n && b.count == n)
            // 2^-64 at worst for n ≥ 8; the short ones are only checked for length.
            if n >= 8 { #expect(a != b, "\(n) bytes drawn twice alike") }
        }
        // The tail of an odd length is random too, not left zero.
        let tails = (0..<64).map { _ in source.bytes(33)[32] }
        #expect(Set(tails).count > 16, "\(tails)")
    }

    @Test func byteValuesAreEvenlySpread() {
        let bytes = SystemRandomSource().bytes(65_536)
        var counts = [Int](repeating: 0, count: 256)
        for b in bytes { counts[Int(b)] += 1 }
        // 256 expected per value; chi-square with 255 degrees of freedom stays far below 400 unless the
        // source is broken (p < 1e-7).
        let chi = counts.reduce(0.0) { $0 + Double(($1 - 256) * ($1 - 256)) / 256 }
        #expect(counts.allSatisfy { $0 > 0 })
        #expect(chi < 400, "chi-square \(chi)")
    }
}
