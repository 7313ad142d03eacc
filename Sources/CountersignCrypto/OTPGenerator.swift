import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// HOTP (RFC 4226) and TOTP (RFC 6238). Time and the last accepted step are passed in: the caller owns
/// the clock and the replay state.
public struct OTPGenerator: Equatable, Sendable {
    public enum Algorithm: String, CaseIterable, Sendable {
        case sha1 = "SHA1"
        case sha256 = "SHA256"
        case sha512 = "SHA512"
    }

    public let secret: [UInt8]
    public let algorithm: Algorithm
    public let digits: Int
    /// TOTP step in seconds.
    public let period: Int

    public init(secret: [UInt8], algorithm: Algorithm = .sha1, digits: Int = 6, period: Int = 30) throws {
        guard !secret.isEmpty else { throw OTPError.invalidSecret("empty") }
        guard (6...8).contains(digits) else {
            throw OTPError.invalidParameter("digits must be 6, 7 or 8, not \(digits)")
        }
        guard period >= 1, period <= 86_400 else {
            throw OTPError.invalidParameter("period must be 1 to 86400 seconds, not \(period)")
        }
        self.secret = secret
        self.algorithm = algorithm
        self.digits = digits
        self.period = period
    }

    /// RFC 4226 §5.3: dynamic truncation of HMAC(secret, counter), modulo 10^digits, zero-padded.
    public func code(counter: UInt64) -> String {
        let key = SymmetricKey(data: secret)
        let message = withUnsafeBytes(of: counter.bigEndian) { Array($0) }
        let mac: [UInt8]
        switch algorithm {
        case .sha1: mac = Array(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: key))
        case .sha256: mac = Array(HMAC<SHA256>.authenticationCode(for: message, using: key))
        case .sha512: mac = Array(HMAC<SHA512>.authenticationCode(for: message, using: key))
        }
        let offset = Int(mac[mac.count - 1] & 0x0f)
        let binary =
            (UInt32(mac[offset] & 0x7f) << 24) | (UInt32(mac[offset + 1]) << 16) | (UInt32(mac[offset + 2]) << 8)
            | UInt32(mac[offset + 3])
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let value = String(binary % modulus)
        return String(repeating: "0", count: digits - value.count) + value
    }

    /// The TOTP time step containing `date` (RFC 6238 §4.2, T0 = 0).
    public func step(at date: Date) -> UInt64 {
        let t = date.timeIntervalSince1970
        // Clamped so that no date (NaN, negative, year 10^300) can trap the conversion.
        guard t.isFinite, t > 0 else { return 0 }
        return UInt64(min(t, 1e18)) / UInt64(period)
    }

    public func code(at date: Date) -> String { code(counter: step(at: date)) }

    /// Checks `candidate` against the steps `window` (0 to 10) either side of `date`, skipping every
    /// step at or before `lastAcceptedStep` (the replay guard). Returns the step that matched, which the
    /// caller must store as the new `lastAcceptedStep`; nil when nothing matched.
    public func verify(_ candidate: String, at date: Date, window: Int = 1, lastAcceptedStep: UInt64? = nil) -> UInt64?
    {
        let now = step(at: date)
        let w = UInt64(max(0, min(window, 10)))
        let low = now >= w ? now - w : 0
        var matched: UInt64?
        // Every step in the window is computed and compared in constant time, so timing says nothing
        // about which step (if any) matched.
        for s in low...(now + w) {
            let fresh = lastAcceptedStep.map { s > $0 } ?? true
            if ConstantTime.equal(code(counter: s).utf8, candidate.utf8) && fresh { matched = s }
        }
        return matched
    }

    /// HOTP: checks counters `counter ... counter + lookAhead` (lookAhead 0 to 100); returns the counter that
    /// matched (store it + 1).
    public func verify(_ candidate: String, counter: UInt64, lookAhead: Int = 0) -> UInt64? {
        var matched: UInt64?
        let end = counter.addingReportingOverflow(UInt64(max(0, min(lookAhead, 100))))
        for c in counter...(end.overflow ? UInt64.max : end.partialValue) {
            // All candidates are computed; the first match wins.
            if ConstantTime.equal(code(counter: c).utf8, candidate.utf8), matched == nil { matched = c }
        }
        return matched
    }
}
