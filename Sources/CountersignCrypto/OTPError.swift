/// Why a one-time passcode setup or URI was refused.
public enum OTPError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformedURI(String)
    case invalidSecret(String)
    case invalidParameter(String)

    public var description: String {
        switch self {
        case .malformedURI(let why): return "malformed otpauth URI: \(why)"
        case .invalidSecret(let why): return "invalid secret: \(why)"
        case .invalidParameter(let why): return "invalid OTP parameter: \(why)"
        }
    }
}
