import CountersignCrypto

/// A CBOR writer for the tests only (the product reads CBOR, never writes it): shortest forms, entries in
/// the order given.
public enum TestCBOR {
    public static func head(_ major: UInt8, _ v: UInt64) -> [UInt8] {
        let m = major << 5
        switch v {
        case 0..<24: return [m | UInt8(v)]
        case 24..<256: return [m | 24, UInt8(v)]
        case 256..<65_536: return [m | 25, UInt8(v >> 8), UInt8(v & 0xFF)]
        case 65_536..<(1 << 32): return [m | 26] + (0..<4).reversed().map { UInt8(v >> (UInt64($0) * 8) & 0xFF) }
        default: return [m | 27] + (0..<8).reversed().map { UInt8(v >> (UInt64($0) * 8) & 0xFF) }
        }
    }

    public static func encode(_ value: CBOR) -> [UInt8] {
        switch value {
        case .int(let i): return i >= 0 ? head(0, UInt64(i)) : head(1, UInt64(-1 - i))
        case .bytes(let b): return head(2, UInt64(b.count)) + b
        case .text(let t): return head(3, UInt64(t.utf8.count)) + Array(t.utf8)
        case .array(let a): return head(4, UInt64(a.count)) + a.flatMap(encode)
        case .map(let e): return head(5, UInt64(e.count)) + e.flatMap { encode($0.key) + encode($0.value) }
        case .bool(let b): return [b ? 0xF5 : 0xF4]
        case .null: return [0xF6]
        }
    }

    public static func map(_ entries: [(CBOR, CBOR)]) -> CBOR { .map(entries.map { CBOR.Entry($0.0, $0.1) }) }
}

/// A seeded generator, so a failure of the random tests can be replayed.
public struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
