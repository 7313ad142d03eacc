import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where session tokens, captcha salts and account IDs come from. Passed in so tests can pin them.
public protocol RandomSource: Sendable {
    func bytes(_ count: Int) -> [UInt8]
}

public struct SystemRandomSource: RandomSource {
    public init() {}

    /// The kernel's CSPRNG, one `getrandom(2)` per 256 bytes (a byte at a time through
    /// `SystemRandomNumberGenerator` was one system call per byte: 32 for a session token).
    public func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "a negative number of random bytes")
        guard count > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: count)
        var filled = 0
        #if os(Linux)
        // getentropy(3) is getrandom(2) for at most 256 bytes, never short.
        out.withUnsafeMutableBytes { b in
            while filled < count, getentropy(b.baseAddress! + filled, min(256, count - filled)) == 0 {
                filled += min(256, count - filled)
            }
        }
        #endif
        // Elsewhere, or should getrandom fail: the standard library's generator (the same source).
        var rng = SystemRandomNumberGenerator()
        while filled < count {
            withUnsafeBytes(of: rng.next()) { word in
                for byte in word where filled < count {
                    out[filled] = byte
                    filled += 1
                }
            }
        }
        return out
    }
}

/// Adapts a `RandomSource` to APIs that take a `RandomNumberGenerator`.
struct RandomSourceGenerator: RandomNumberGenerator {
    let source: any RandomSource
    mutating func next() -> UInt64 { source.bytes(8).reduce(0) { $0 << 8 | UInt64($1) } }
}
