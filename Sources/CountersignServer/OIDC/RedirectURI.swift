import Foundation

/// A redirect URI (or post-logout redirect URI) as an administrator registers it for a client, and the one rule
/// that compares a request's URI with it (docs/PROTOCOL.md §6.4): exact string equality (RFC 9700 §4.1.3),
/// except that a loopback `http` URI of a public (native) client matches on any port (RFC 8252 §7.3).
///
/// Registration refuses what peers' advisories were made of: schemes other than `https` (and `http` only
/// for loopback hosts), a scheme or host not in lower case, user information (`user@`), a fragment, wildcards,
/// dot segments in any spelling (`/../`, `..;/`, `%2e`), backslashes, spaces and control characters.
struct RedirectURI: Equatable, Sendable {
    /// The URI exactly as registered.
    let text: String
    /// `http` to 127.0.0.1, [::1] or localhost: the kind a native app listens on, on a port of its choosing.
    let isLoopback: Bool

    static let maxLength = 2_000

    init(registering raw: String) throws(OIDCClientError) {
        guard let parts = Self.parts(raw) else {
            throw .invalidRedirectURI(raw, Self.rule)
        }
        if let reason = parts.refusal { throw .invalidRedirectURI(raw, reason) }
        text = raw
        isLoopback = parts.loopback
    }

    /// Whether `requested` is this URI: the same string, or for a public client's loopback URI the same but for
    /// the port.
    func matches(_ requested: String, anyLoopbackPort: Bool) -> Bool {
        if requested == text { return true }
        guard anyLoopbackPort, isLoopback, let mine = Self.parts(text), let theirs = Self.parts(requested),
            theirs.refusal == nil, theirs.loopback
        else { return false }
        return mine.withoutPort == theirs.withoutPort
    }

    static let rule =
        "an absolute https URI (http only to 127.0.0.1, [::1] or localhost), in lower case up to the path, "
        + "without user information, fragment, wildcard or dot segments, at most \(maxLength) characters"

    private struct Parts {
        var loopback: Bool
        var refusal: String?
        /// Scheme, host, path and query: what a loopback URI must share to match on another port.
        var withoutPort: String
    }

    private static func parts(_ raw: String) -> Parts? {
        guard !raw.isEmpty, raw.utf8.count <= maxLength,
            raw.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }),
            let components = URLComponents(string: raw), let scheme = components.scheme,
            let host = components.host, !host.isEmpty
        else { return nil }
        let loopback = scheme == "http" && ["127.0.0.1", "[::1]", "::1", "localhost"].contains(host)
        let path = components.percentEncodedPath
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        let refusal: String? =
            if scheme != "https" && !(scheme == "http" && loopback) {
                "only https (or http to a loopback address) may be a redirect URI"
            } else if !raw.hasPrefix(scheme + "://") {
                "the scheme must be written in lower case, followed by ://"
            } else if host != host.lowercased() {
                "the host must be written in lower case"
            } else if components.user != nil || components.password != nil || raw.contains("@") {
                "a redirect URI carries no user information (@)"
            } else if components.fragment != nil || raw.contains("#") {
                "a redirect URI has no fragment (#)"
            } else if raw.contains("*") {
                "wildcards are not allowed: register every URI in full"
            } else if raw.contains("\\") {
                "backslashes are not allowed"
            } else if path.lowercased().contains("%2e") || path.contains(";")
                || segments.contains(where: { $0 == "." || $0 == ".." })
            {
                "dot segments (., .., %2e) and ; are not allowed in the path"
            } else if let port = components.port, !(1...65_535).contains(port) {
                "the port must be 1 to 65535"
            } else {
                nil
            }
        let query = components.percentEncodedQuery.map { "?" + $0 } ?? ""
        return Parts(loopback: loopback, refusal: refusal, withoutPort: "\(scheme)://\(host)\(path)\(query)")
    }
}
