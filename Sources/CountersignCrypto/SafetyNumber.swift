import Crypto

/// The safety number of two accounts (docs/SPEC.md §9): 60 digits that both people compute from the two
/// usernames and the two sets of active device signing keys, and compare in person or over another channel.
/// It is Signal's numeric fingerprint (libsignal `fingerprint.rs`, version 0, 5200 iterations of SHA-512)
/// with an account's sorted device keys in place of Signal's single identity key.
public enum SafetyNumber {
    /// Signal's iteration count, kept as is.
    public static let iterations = 5200

    /// The 60 digits (`0`–`9`, no spaces), the same whichever side is local. Throws
    /// `SafetyNumberError.noSigningKeys` when either account has no active device key.
    public static func compute(
        localUsername: String,
        localSigningKeys: [PublicKey],
        remoteUsername: String,
        remoteSigningKeys: [PublicKey]
    ) throws -> String {
        let local = try accountDigits(username: localUsername, signingKeys: localSigningKeys)
        let remote = try accountDigits(username: remoteUsername, signingKeys: remoteSigningKeys)
        return combine(local, remote)
    }

    /// `"12345 67890 …"`: the digits in groups of five separated by single spaces (12 groups for a safety
    /// number; a shorter last group if the count is not a multiple of five).
    public static func display(_ digits: String) -> String {
        var groups: [Substring] = []
        var rest = digits[...]
        while !rest.isEmpty {
            groups.append(rest.prefix(5))
            rest = rest.dropFirst(5)
        }
        return groups.joined(separator: " ")
    }

    /// Signal's `DisplayableFingerprint`: the smaller half (as a string) first.
    static func combine(_ local: String, _ remote: String) -> String {
        local.utf8.lexicographicallyPrecedes(remote.utf8) ? local + remote : remote + local
    }

    /// One account's 30 digits.
    static func accountDigits(username: String, signingKeys: [PublicKey]) throws -> String {
        guard !signingKeys.isEmpty else { throw SafetyNumberError.noSigningKeys(username: username) }
        return digits(of: fingerprint(keyBytes: keyBytes(signingKeys), identifier: Array(username.utf8)))
    }

    /// `lv(spki_1) || … || lv(spki_n)`, the distinct SPKI DERs in ascending byte order.
    static func keyBytes(_ keys: [PublicKey]) -> [UInt8] {
        var previous: [UInt8]? = nil
        var out: [UInt8] = []
        for spki in keys.map(\.spkiDER).sorted(by: { $0.lexicographicallyPrecedes($1) }) where spki != previous {
            out += DeviceProof.lv(spki)
            previous = spki
        }
        return out
    }

    /// Signal's `get_fingerprint`: `h = u16(0) || key || id`, then `iterations` times `h = SHA-512(h || key)`.
    static func fingerprint(keyBytes: [UInt8], identifier: [UInt8], iterations: Int = iterations) -> [UInt8] {
        var hash: [UInt8] = [0, 0] + keyBytes + identifier
        for _ in 0..<iterations {
            var sha = SHA512()
            sha.update(data: hash)
            sha.update(data: keyBytes)
            hash = Array(sha.finalize())
        }
        return hash
    }

    /// Signal's `get_encoded_string`: six 5-byte big-endian numbers mod 100,000, each as 5 digits.
    static func digits(of fingerprint: [UInt8]) -> String {
        precondition(fingerprint.count >= 30)
        return (0..<6).map { i -> String in
            let n = fingerprint[(i * 5)..<(i * 5 + 5)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 100_000
            let s = String(n)
            return String(repeating: "0", count: 5 - s.count) + s
        }.joined()
    }
}

/// Why a safety number could not be computed.
public enum SafetyNumberError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The account has no active device signing key, so there is nothing to vouch for.
    case noSigningKeys(username: String)

    public var description: String {
        switch self {
        case .noSigningKeys(let username):
            return "no safety number: account \"\(username)\" has no active device key; it must register a device first"
        }
    }
}
