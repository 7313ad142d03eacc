import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The first 16 bytes of SHA-256 over a key's SPKI DER (docs/SPEC.md §2.4). Also the key ID in sealed files.
public struct Fingerprint: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) {
        precondition(bytes.count == 16)
        self.bytes = bytes
    }

    init(spki: [UInt8]) { self.init(bytes: Array(SHA256.hash(data: spki).prefix(16))) }

    /// `3f2a9c01:77e0b5d2:0c4a18f3:9e21d7aa`
    public var description: String {
        let hex = Hex.encode(bytes)
        return stride(from: 0, to: 32, by: 8).map { i in
            String(hex[hex.index(hex.startIndex, offsetBy: i)..<hex.index(hex.startIndex, offsetBy: i + 8)])
        }.joined(separator: ":")
    }
}
