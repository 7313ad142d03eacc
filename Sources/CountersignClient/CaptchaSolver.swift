import CountersignCrypto
import Crypto
import Foundation

/// Solves ALTCHA v1 challenges: the number n ≤ maxnumber with SHA-256(salt || n) = challenge.
public enum CaptchaSolver {
    /// The base64 JSON the server expects in the `captcha` field, or nil when no number up to
    /// `maxnumber` (at most 10,000,000) solves it.
    public static func solve(_ c: CaptchaChallenge) -> String? {
        guard c.algorithm == "SHA-256", c.maxnumber >= 0, c.maxnumber <= 10_000_000,
            let target = Hex.decode(c.challenge), target.count == 32
        else {
            return nil
        }
        let salt = Array(c.salt.utf8)
        for n in 0...c.maxnumber {
            var h = SHA256()
            h.update(data: salt)
            h.update(data: Array(String(n).utf8))
            guard Array(h.finalize()) == target else { continue }
            let solution = Solution(
                algorithm: c.algorithm,
                challenge: c.challenge,
                number: n,
                salt: c.salt,
                signature: c.signature
            )
            return (try? JSONEncoder().encode(solution))?.base64EncodedString()
        }
        return nil
    }

    struct Solution: Encodable {
        var algorithm: String
        var challenge: String
        var number: Int
        var salt: String
        var signature: String
    }
}
