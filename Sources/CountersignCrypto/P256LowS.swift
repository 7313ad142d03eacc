/// Low-S normalisation of P-256 ECDSA signatures (docs/SPEC.md §8.1). ECDSA accepts both `(r, s)` and
/// `(r, q − s)`; admitting only `s ≤ (q − 1)/2` leaves one encoding per signature, so an envelope cannot
/// be re-encoded into other bytes that still verify.
package enum P256LowS {
    /// The group order q, big-endian.
    package static let order: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
    ]
    /// (q − 1) / 2, big-endian.
    static let halfOrder: [UInt8] = [
        0x7F, 0xFF, 0xFF, 0xFF, 0x80, 0x00, 0x00, 0x00, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xDE, 0x73, 0x7D, 0x56, 0xD3, 0x8B, 0xCF, 0x42, 0x79, 0xDC, 0xE5, 0x61, 0x7E, 0x31, 0x92, 0xA8,
    ]

    /// Big-endian comparison of two 32-byte numbers. Signatures are public, so this need not be constant time.
    static func less(_ a: ArraySlice<UInt8>, _ b: [UInt8]) -> Bool {
        for (x, y) in zip(a, b) where x != y { return x < y }
        return false
    }

    static func isZero(_ a: ArraySlice<UInt8>) -> Bool { a.allSatisfy { $0 == 0 } }

    /// True when `r || s` is in range and low: 1 ≤ r < q, 1 ≤ s ≤ (q − 1)/2.
    static func isCanonical(_ signature: [UInt8]) -> Bool {
        guard signature.count == 64 else { return false }
        let r = signature[0..<32]
        let s = signature[32..<64]
        return !isZero(r) && less(r, order) && !isZero(s) && !less(ArraySlice(halfOrder), Array(s))
    }

    /// `r || s` with s replaced by q − s when it is high.
    package static func normalize(_ signature: [UInt8]) -> [UInt8] {
        precondition(signature.count == 64)
        let s = signature[32..<64]
        guard less(ArraySlice(halfOrder), Array(s)) else { return signature }
        var out = Array(signature[0..<32])
        out.append(contentsOf: subtract(order, Array(s)))
        return out
    }

    /// a − b for 32-byte big-endian a ≥ b.
    package static func subtract(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for i in stride(from: 31, through: 0, by: -1) {
            var d = Int(a[i]) - Int(b[i]) - borrow
            borrow = d < 0 ? 1 : 0
            if d < 0 { d += 256 }
            out[i] = UInt8(d)
        }
        return out
    }
}
