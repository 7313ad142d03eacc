/// Number matching for push approvals (docs/PROTOCOL.md §3, NIST SP 800-63B-4 §3.1.3): the sign-in side
/// shows a number; the authenticator's user types it, or picks it among three.
struct NumberMatching: Codable, Equatable, Sendable {
    enum Kind: String, Codable, Sendable {
        case enterManually = "ENTER_MANUALLY"
        case selectNumber = "SELECT_NUMBER"
    }

    let kind: Kind
    let digits: Int
    /// What the sign-in side shows, zero-padded to `digits`.
    let number: String
    /// SELECT_NUMBER: three distinct numbers, the right one among them, in random order. Empty for
    /// ENTER_MANUALLY, whose challenge must not carry the number.
    let options: [String]

    static func make(kind: Kind, digits: Int, random: any RandomSource) -> NumberMatching {
        precondition(digits == 2 || digits == 6, "2 digits, or 6 where policy asks")
        var upper = 1
        for _ in 0..<digits { upper *= 10 }
        func draw() -> Int {
            // Uniform below `upper` by rejection from 32 random bits.
            let limit = UInt32.max - UInt32.max % UInt32(upper)
            while true {
                let v = random.bytes(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                if v < limit { return Int(v % UInt32(upper)) }
            }
        }
        func text(_ n: Int) -> String {
            let s = String(n)
            return String(repeating: "0", count: digits - s.count) + s
        }
        let right = draw()
        guard kind == .selectNumber else {
            return NumberMatching(kind: kind, digits: digits, number: text(right), options: [])
        }
        var picks = [right]
        while picks.count < 3 {
            let n = draw()
            if !picks.contains(n) { picks.append(n) }
        }
        // Fisher–Yates with the same source, so the right one's place is not predictable.
        for i in stride(from: picks.count - 1, to: 0, by: -1) {
            var j = -1
            while j < 0 {
                let b = Int(random.bytes(1)[0])
                if b < 256 - 256 % (i + 1) { j = b % (i + 1) }
            }
            picks.swapAt(i, j)
        }
        return NumberMatching(kind: kind, digits: digits, number: text(right), options: picks.map(text))
    }

    /// Constant time in the number's length: the number is a secret until the transaction ends.
    func matches(_ answer: String?) -> Bool {
        guard let answer else { return false }
        let a = Array(answer.utf8)
        let b = Array(number.utf8)
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
