/// Comparison of secrets whose time does not depend on where they differ (only on their lengths, which
/// are public: a code's digits, a hash's size).
public enum ConstantTime {
    public static func equal(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        var d: UInt8 = 0
        for (x, y) in zip(a, b) { d |= x ^ y }
        return d == 0
    }
}
