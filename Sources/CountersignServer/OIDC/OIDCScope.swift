/// Scopes as OAuth writes them (RFC 6749 §3.3: space-separated, case-sensitive) and the ones this provider knows.
enum OIDCScope {
    static let openid = "openid"
    static let profile = "profile"
    static let offlineAccess = "offline_access"
    /// Every scope the provider grants; others in a request are ignored (RFC 6749 §3.3 lets the server narrow).
    static let supported = [openid, profile, offlineAccess]

    static func split(_ text: String) -> [String] { text.split(separator: " ").map(String.init) }
    /// Sorted and without repeats, so that a set of scopes has one text (consents compare them).
    static func text(_ scope: [String]) -> String { Array(Set(scope)).sorted().joined(separator: " ") }
}
