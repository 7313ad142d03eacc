import CountersignCrypto
import Foundation

/// Everything `countersign serve` can set. The defaults are the documented ones (docs/SERVER.md).
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
    /// A browser's binding (docs/PROTOCOL.md §1.1) to its messaging device's key ends after this long
    /// unused (0: no browser stays signed in across reloads); one to a key of its own, before the browser
    /// has a device, after `bindingIdleWithoutDevice`.
    public var bindingIdle: TimeInterval = 30 * 86_400
    public var bindingIdleWithoutDevice: TimeInterval = 12 * 60 * 60
    /// Whom a locked-out user is told to ask to unlock the account (`COUNTERSIGN_ADMIN_CONTACT`), in the
    /// refusal's words and its `contact` member; nil: "an administrator".
    public var adminContact: String?
    public var hasher = PasswordHasher.owasp
    /// Password checks waiting for a core beyond this are refused with 503 (each holds 19 MiB while it runs).
    public var maxQueuedHashes = 16 * max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// Request bodies above this are refused with 413.
    public var maxBodyBytes = 64 * 1024
    /// Failed sign-ins per client address.
    public var signInFailuresPerAddress = AddressThrottle.Limit(capacity: 20, window: 10 * 60)
    /// Registrations per client address.
    public var registrationsPerAddress = AddressThrottle.Limit(capacity: 10, window: 60 * 60)
    /// Under the `risk` captcha policy, how long a failed sign-in from an address (its /64 for IPv6) or
    /// for a username keeps asking for a captcha.
    public var riskMemory: TimeInterval = 15 * 60
    /// A connection with no request in progress is closed after this long, and so is one that has not
    /// finished sending a request's headers this long after its previous response (or its opening):
    /// idle and slowloris connections cannot hold file descriptors for ever.
    public var idleTimeout: TimeInterval = 30
    /// A request whose body has not fully arrived this long after its headers is dropped.
    public var readTimeout: TimeInterval = 30
    /// The bearer token `GET /metrics` asks for (docs/SERVER.md, MONITORING). Without one the route
    /// answers 404: sign-in outcome counters and per-route counts are not for anonymous clients.
    public var metricsToken: String?
    /// Active devices per account.
    public var maxDevicesPerAccount = 10
    /// A device session ends this long after it was opened, or after this long unused.
    public var deviceSessionLifetime: TimeInterval = 30 * 86_400
    public var deviceSessionIdle: TimeInterval = 7 * 86_400
    /// Registration challenges and device-session nonces are single use and expire after this long.
    public var challengeLifetime: TimeInterval = 5 * 60
    /// Device-session nonces per client address.
    public var deviceNoncesPerAddress = AddressThrottle.Limit(capacity: 60, window: 60)
    /// Undelivered (unacknowledged) queue entries, and the stored envelope, are deleted this long after
    /// the message is due (delivered).
    public var messageRetention: TimeInterval = 30 * 86_400
    /// Sends per account (all its devices), refilled evenly over the window; nil: no limit.
    public var sendsPerAccount: AddressThrottle.Limit? = AddressThrottle.Limit(capacity: 300, window: 60)
    /// Bytes of envelopes an account may have stored at once (sent, not yet expired, not cancelled);
    /// 0: no quota. Each envelope is stored once whatever its number of recipients.
    public var messageQuotaBytes: Int64 = 1 << 30
    /// Sends written in one transaction at most (group commit); 1 writes each alone.
    public var sendBatch = 128
    /// The OpenID Connect clients the configuration file defines (`oidc-clients`), applied at start; nil when
    /// the file has no such key (the clients it defined before are then left as they are).
    public var oidcClients: [OIDCAdmin.Configured]?
    /// The URL clients reach this server at (`https://auth.example.com`), put into the pairing and
    /// authentication-code URIs an authenticator scans. Unset: `http://` and the request's Host, which is
    /// right only when clients talk to this process directly over plain HTTP (behind a TLS proxy, set it).
    public var publicURL: String?
    /// More origins passkeys may be used from (`--webauthn-origin`, repeatable), beside the public URL's:
    /// another port or scheme of the same host. The RP ID stays the public URL's host.
    public var webAuthnOrigins: [String] = []
    /// Whether a QR sign-in code may ask to complete on the authenticator's claim alone (PingOne's
    /// `userApproval: NOT_REQUIRED`). Off: the code's anonymous creator would choose it, and a phished
    /// claim would then sign the victim in. `COUNTERSIGN_AUTH_CODES_WITHOUT_APPROVAL=1` turns it on.
    public var authCodesWithoutApproval = false
    /// Open connections per client address (IPv6 per /64) that have not authenticated a push channel;
    /// more are closed at once. 0: no cap. A trusted proxy's connections are not capped.
    public var connectionsPerAddress = 128
    /// The reverse proxies whose `Forwarded` / `X-Forwarded-For` name the client (`--trusted-proxy`):
    /// throttles, the captcha's risk rule and the audit then see the client, not the proxy.
    public var trustedProxies = TrustedProxies()
    /// Push hosts sent to whatever their addresses, and over http too (`push-allowed-hosts`): a self-hosted
    /// ntfy on the local network, a test's loopback push service. Others must be https and public.
    public var pushAllowedHosts: [String] = []
    /// The contact put in each VAPID token's `sub` (`mailto:` or `https:`), for push services to reach the
    /// operator (`vapid-subject`); nil: none.
    public var vapidSubject: String?
    /// APNs for iOS apps built on the SDK (`apns-key-file` and the rest); nil: device tokens are refused.
    public var apns: APNsSettings?

    /// A public URL as `--public-url` takes it: http or https, a host, no path beyond `/`, no query,
    /// no credentials; returned without a trailing slash.
    public static func validPublicURL(_ text: String) -> String? {
        guard let c = URLComponents(string: text), let scheme = c.scheme?.lowercased(),
            ["http", "https"].contains(scheme),
            let host = c.percentEncodedHost, !host.isEmpty, c.user == nil, c.password == nil, c.query == nil,
            c.fragment == nil,
            c.path.isEmpty || c.path == "/"
        else { return nil }
        return scheme + "://" + host + (c.port.map { ":\($0)" } ?? "")
    }

    /// `text` trimmed, when it can be shown as a contact: 1 to 200 code points, one line, no control,
    /// format (direction-changing, zero-width) or line-separating characters (it is printed inside a
    /// sentence, in the browser and the terminal).
    public static func adminContact(_ text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard (1...200).contains(trimmed.unicodeScalars.count) else { return nil }
        // Format (Cf) covers the direction marks and overrides, zero-width characters and soft hyphens.
        let refused = CharacterSet.controlCharacters.union(CharacterSet(charactersIn: "\u{2028}\u{2029}"))
        guard trimmed.unicodeScalars.allSatisfy({ !refused.contains($0) && $0.properties.generalCategory != .format })
        else { return nil }
        return trimmed
    }

    /// A `push-allowed-hosts` entry, lower case: a host name or an IP address (any port), or either with a port
    /// (`ntfy.internal:8080`, `[::1]:8080`); nil otherwise.
    public static func pushHost(_ text: String) -> String? {
        let entry = text.lowercased()
        if let m = entry.wholeMatch(of: #/\[([0-9a-f:.]+)\]:([0-9]{1,5})/#) {
            guard PushEndpointPolicy.ipv6(String(m.1)) != nil, let port = Int(m.2), (1...65535).contains(port)
            else { return nil }
            return entry
        }
        if TrustedProxies.bytes(entry) != nil { return entry }
        var host = entry
        if let colon = entry.lastIndex(of: ":") {
            guard let port = Int(entry[entry.index(after: colon)...]), (1...65535).contains(port) else { return nil }
            host = String(entry[..<colon])
            if TrustedProxies.bytes(host)?.count == 4 { return entry }
        }
        guard (1...253).contains(host.utf8.count) else { return nil }
        let label = #/[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?/#
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        return labels.allSatisfy { $0.wholeMatch(of: label) != nil } ? entry : nil
    }

    /// A `vapid-subject`: `mailto:` with an address, or an `https:` URL (RFC 8292 §2.1); nil otherwise.
    public static func vapidSubject(_ text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.utf8.count <= 200, trimmed.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else { return nil }
        if trimmed.hasPrefix("mailto:"), trimmed.dropFirst(7).contains("@") { return trimmed }
        if let c = URLComponents(string: trimmed), c.scheme == "https", c.host?.isEmpty == false { return trimmed }
        return nil
    }

    public init() {}
}

/// Where the data lives: `sqlite:PATH` or `postgres://user:pass@host:port/db`.
public enum DatabaseLocation: Sendable, Equatable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(url: String)

    public init(parsing text: String) throws {
        if text.hasPrefix("sqlite:") {
            let path = String(text.dropFirst("sqlite:".count))
            guard !path.isEmpty else {
                throw ConfigurationError("--database sqlite: needs a file path, e.g. sqlite:countersign.sqlite")
            }
            self = .sqlite(path: path)
        } else if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            guard URL(string: text)?.host != nil else {
                throw ConfigurationError("--database \(Self.redacted(text)) is not a valid postgres:// URL")
            }
            self = .postgres(url: text)
        } else {
            throw ConfigurationError(
                "--database takes sqlite:PATH or postgres://user:pass@host:port/db; \"\(Self.redacted(text))\" is neither"
            )
        }
    }

    /// The text without its password, for logs and errors. A parsable URL keeps its user and hides the
    /// password; anything else is shown as typed (so an operator sees the typo) except what sits between
    /// `://` and the last `@`, which may be a password.
    static func redacted(_ text: String) -> String {
        if var c = URLComponents(string: text), c.scheme != nil, c.host != nil {
            if c.password != nil { c.password = "***" }
            if let s = c.string { return s }
        }
        var shown = text
        if let scheme = text.range(of: "://"), let at = text.range(of: "@", options: .backwards),
            at.lowerBound >= scheme.upperBound
        {
            shown = String(text[..<scheme.upperBound]) + "…" + String(text[at.lowerBound...])
        }
        let printable = String(
            String.UnicodeScalarView(shown.unicodeScalars.filter { $0.properties.generalCategory != .control })
        )
        return printable.count > 200 ? String(printable.prefix(200)) + "…" : printable
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

extension ServerConfiguration: CustomStringConvertible {
    /// What a log may show: no metrics token, APNs key or database password. ServiceLifecycle logs its services'
    /// descriptions at debug level, and the purge service holds the configuration.
    public var description: String { "ServerConfiguration(\(host):\(port), database: \(database))" }
}
