import CountersignCrypto
import Crypto
import Foundation

/// Ten single-use recovery codes (docs/PROTOCOL.md §3): shown once, stored as HMAC-SHA-256 under a server
/// key. They are random (49 bits each), so a keyed fast hash resists a stolen table as well as a slow
/// one would, and checking one costs nothing an attacker could use to load the server.
enum RecoveryCodes {
    static let count = 10
    static let length = 10

    /// New codes, as shown (`XXXXX-XXXXX`), and their hashes, in the same order.
    static func make(key: [UInt8], random: any RandomSource) -> (shown: [String], hashes: [String]) {
        let codes = (0..<count).map { _ in HumanCode.generate(length: length, random: random) }
        return (codes.map { HumanCode.grouped($0, by: 5) }, codes.map { hash($0, key: key) })
    }

    /// The hash of what someone typed, or nil when it cannot be a recovery code.
    static func hash(typed: String, key: [UInt8]) -> String? {
        HumanCode.normalize(typed, length: length).map { hash($0, key: key) }
    }

    static func hash(_ normalized: String, key: [UInt8]) -> String {
        Hex.encode(HMAC<SHA256>.authenticationCode(for: Array(normalized.utf8), using: SymmetricKey(data: key)))
    }
}
