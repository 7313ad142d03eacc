import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation

/// ALTCHA v1 proof-of-work challenges (https://altcha.org/docs/v1): the client finds `number` ≤ `maxnumber`
/// with `SHA-256(salt || number) = challenge`; the server signs `challenge` with HMAC-SHA-256 so it keeps
/// no state until a solution is spent. The salt carries `expires` (Unix seconds) under the hash.
public struct Altcha: Sendable {
    public typealias Challenge = CaptchaChallenge

    /// The client's answer, sent base64-encoded as the `captcha` field.
    public struct Solution: Codable, Equatable, Sendable {
        public var algorithm: String
        public var challenge: String
        public var number: Int
        public var salt: String
        public var signature: String
    }

    public enum Failure: Error, Equatable, Sendable {
        case malformed
        case badSignature
        case wrongAnswer
        case expired
    }

    let key: SymmetricKey
    public let maxNumber: Int
    public let lifetime: TimeInterval

    public init(key: [UInt8], maxNumber: Int = 100_000, lifetime: TimeInterval = 600) {
        self.key = SymmetricKey(data: key)
        self.maxNumber = maxNumber
        self.lifetime = lifetime
    }

    public func challenge<R: RandomNumberGenerator>(now: Date, using rng: inout R) -> Challenge {
        let nonce = Hex.encode((0..<12).map { _ in UInt8.random(in: 0...255, using: &rng) })
        let expires = Int(now.timeIntervalSince1970 + lifetime)
        let salt = "\(nonce)?expires=\(expires)&"
        let number = Int.random(in: 0...maxNumber, using: &rng)
        let challenge = Self.sha256Hex(salt + String(number))
        return Challenge(
            algorithm: "SHA-256",
            challenge: challenge,
            maxnumber: maxNumber,
            salt: salt,
            signature: sign(challenge)
        )
    }

    /// Checks a base64 payload; returns the challenge and its expiry so the caller can refuse a second use.
    public func verify(_ payload: String, now: Date) throws -> (challenge: String, expires: Date) {
        guard payload.utf8.count <= 4096, let data = Data(base64Encoded: payload),
            let s = try? JSONDecoder().decode(Solution.self, from: data),
            s.algorithm == "SHA-256", s.salt.utf8.count <= 512, s.challenge.utf8.count == 64,
            (0...maxNumber).contains(s.number)
        else { throw Failure.malformed }
        // swift-crypto compares the MAC in constant time, as the sealed-file header MAC does.
        guard let mac = Hex.decode(s.signature),
            HMAC<SHA256>.isValidAuthenticationCode(
                mac,
                authenticating: Array(s.challenge.lowercased().utf8),
                using: key
            )
        else { throw Failure.badSignature }
        guard Self.sha256Hex(s.salt + String(s.number)) == s.challenge.lowercased() else { throw Failure.wrongAnswer }
        guard let expires = Self.expires(in: s.salt) else { throw Failure.malformed }
        guard expires > now else { throw Failure.expired }
        return (s.challenge.lowercased(), expires)
    }

    func sign(_ challenge: String) -> String {
        Hex.encode(HMAC<SHA256>.authenticationCode(for: Array(challenge.lowercased().utf8), using: key))
    }

    /// The one `expires` parameter of the salt's query; a salt with two is refused (the signed challenge
    /// covers the salt, but one reading of it must be the only one).
    static func expires(in salt: String) -> Date? {
        guard let q = salt.firstIndex(of: "?") else { return nil }
        let values = salt[salt.index(after: q)...].split(separator: "&").compactMap { pair -> Substring? in
            let kv = pair.split(separator: "=", maxSplits: 1)
            return kv.count == 2 && kv[0] == "expires" ? kv[1] : nil
        }
        guard values.count == 1, let seconds = Int(values[0]), seconds > 0 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    static func sha256Hex(_ s: String) -> String {
        Hex.encode(SHA256.hash(data: Array(s.utf8)))
    }
}
