import Crypto

extension RandomNumberGenerator {
    /// `count` bytes from this generator. Every random value in sealing flows through here, so a test
    /// can pass a seeded generator and get byte-exact output.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(count + 8)
        while out.count < count {
            withUnsafeBytes(of: next().littleEndian) { out.append(contentsOf: $0) }
        }
        out.removeLast(out.count - count)
        return out
    }
}

/// A deterministic generator for tests and vectors: SHA-256 in counter mode over a seed. Package-only:
/// anything sealed or generated with it is predictable, and a copy replays keys and nonces.
package struct SeededRandom: RandomNumberGenerator, Sendable {
    private let seed: [UInt8]
    private var counter: UInt64 = 0
    private var pool: [UInt8] = []

    package init(seed: String) { self.seed = Array(seed.utf8) }

    package mutating func next() -> UInt64 {
        if pool.count < 8 {
            var h = SHA256()
            h.update(data: seed)
            withUnsafeBytes(of: counter.bigEndian) { h.update(bufferPointer: $0) }
            counter += 1
            pool.append(contentsOf: h.finalize())
        }
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(pool[i]) << (8 * UInt64(i)) }
        pool.removeFirst(8)
        return v
    }
}

enum P256Scalar {
    /// A fresh P-256 private key from `rng`; rejection-samples the (2^-32-likely) out-of-range scalars.
    static func keyAgreementKey<R: RandomNumberGenerator>(using rng: inout R) -> P256.KeyAgreement.PrivateKey {
        while true {
            if let k = try? P256.KeyAgreement.PrivateKey(rawRepresentation: rng.bytes(32)) { return k }
        }
    }
}
