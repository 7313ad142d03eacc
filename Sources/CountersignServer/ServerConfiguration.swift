import CountersignCrypto
import Foundation

/// Everything `countersign serve` can set. The defaults are the documented ones (README, docs/SERVER.md).
public struct ServerConfiguration: Sendable {
    public enum CaptchaPolicy: String, Sendable, CaseIterable {
        /// Every sign-in and registration (the seed app asks every time).
        case always
        /// Only after a failed sign-in for that username or from that address.
        case risk
        case off
    }

    public var host = "127.0.0.1"
    public var port = 8080
    public var database: DatabaseLocation = .sqlite(path: "countersign.sqlite")
    public var captcha = CaptchaPolicy.always
    /// ALTCHA's own default: about 500,000 SHA-256 on average for the client, one for the server.
    public var captchaMaxNumber = 1_000_000
    public var lockout = LockoutPolicy()
    public var sessionIdle: TimeInterval = 30 * 60
    public var sessionLifetime: TimeInterval = 12 * 60 * 60
    public var hasher = PasswordHasher.owasp
    /// Password checks waiting for a core beyond this are refused with 503 (each holds 19 MiB while it runs).
    public var maxQueuedHashes = 16 * max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// Request bodies above this are refused with 413.
    public var maxBodyBytes = 64 * 1024
    /// Failed sign-ins per client address.
    public var signInFailuresPerAddress = AddressThrottle.Limit(capacity: 20, window: 10 * 60)
    /// Registrations per client address.
    public var registrationsPerAddress = AddressThrottle.Limit(capacity: 10, window: 60 * 60)

    public init() {}
}

/// Where the data lives: `sqlite:PATH` or `postgres://user:pass@host:port/db`.
public enum DatabaseLocation: Sendable, Equatable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(url: String)

    public init(parsing text: String) throws {
        if text.hasPrefix("sqlite:") {
            let path = String(text.dropFirst("sqlite:".count))
            guard !path.isEmpty else { throw ConfigurationError("--database sqlite: needs a file path, e.g. sqlite:countersign.sqlite") }
            self = .sqlite(path: path)
        } else if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            guard URL(string: text)?.host != nil else { throw ConfigurationError("--database \(Self.redacted(text)) is not a valid postgres:// URL") }
            self = .postgres(url: text)
        } else {
            throw ConfigurationError("--database takes sqlite:PATH or postgres://user:pass@host:port/db, not \(Self.redacted(text))")
        }
    }

    /// The URL without its password, for logs and errors.
    static func redacted(_ url: String) -> String {
        // Anything that does not parse is shown as nothing at all: it may hold a password.
        guard var c = URLComponents(string: url), let host = c.host else { return "postgres://…" }
        if c.password != nil { c.password = "***" }
        return c.string ?? "postgres://…@\(host)"
    }

    public var description: String {
        switch self {
        case .sqlite(let path): return "sqlite:\(path)"
        case .postgres(let url): return Self.redacted(url)
        }
    }
}

public struct ConfigurationError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
