import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation

/// A 32-byte nonce a client signs once (device registration and sessions, session resumptions): the
/// client gets its bytes, the store keeps only their SHA-256, and a spent, expired or mismatched one is
/// refused by the store's `spendChallenge`.
struct SingleUseNonce {
    let challenge: DeviceChallenge
    let hash: String

    init(random: any RandomSource, now: Date, lifetime: TimeInterval) {
        let bytes = random.bytes(32)
        challenge = DeviceChallenge(challenge: Base64URL(bytes), expiresAt: now.addingTimeInterval(lifetime))
        hash = Self.hash(bytes)
    }

    /// The stored form of a nonce a client sent back; nil when it is not 32 bytes (never issued here).
    static func storedHash(of nonce: Base64URL) -> String? {
        nonce.bytes.count == 32 ? hash(nonce.bytes) : nil
    }

    private static func hash(_ bytes: [UInt8]) -> String { Hex.encode(SHA256.hash(data: bytes)) }
}
