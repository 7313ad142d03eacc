import Foundation

/// Where session tokens, captcha salts and account IDs come from. Passed in so tests can pin them.
public protocol RandomSource: Sendable {
    func bytes(_ count: Int) -> [UInt8]
}

public struct SystemRandomSource: RandomSource {
    public init() {}
    public func bytes(_ count: Int) -> [UInt8] {
        var rng = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }
}

/// Adapts a `RandomSource` to APIs that take a `RandomNumberGenerator`.
struct RandomSourceGenerator: RandomNumberGenerator {
    let source: any RandomSource
    mutating func next() -> UInt64 { source.bytes(8).reduce(0) { $0 << 8 | UInt64($1) } }
}
