/// Why an administrator's client registration or change was refused (`countersign-server admin oidc-client`).
/// Closed; each case says what is wrong and what to give instead.
public enum OIDCClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A redirect or post-logout redirect URI (the text given) breaks the rule (the reason).
    case invalidRedirectURI(String, String)
    case invalidClientID(String)
    case invalidName
    case noRedirectURI
    case unknownClient(String)
    case duplicateClient(String)
    case invalidPolicy(String)
    case invalidAlgorithm(String)
    case invalidUser(String)

    public var description: String {
        switch self {
        case .invalidRedirectURI(let uri, let reason): "\(uri.debugDescription) is refused: \(reason)"
        case .invalidClientID(let id):
            "\(id.debugDescription) is not a client ID: 3 to 64 characters of a-z, 0-9, '.', '_' and '-'"
        case .invalidName: "a client's name is 1 to 100 characters, no control characters"
        case .noRedirectURI: "a client needs at least one redirect URI (--redirect-uri)"
        case .unknownClient(let id): "there is no client \(id.debugDescription) (admin oidc-client list)"
        case .duplicateClient(let id): "a client \(id.debugDescription) exists already (admin oidc-client update)"
        case .invalidPolicy(let text):
            "\(text.debugDescription) is not a sign-in policy: password, mfa or phishing-resistant"
        case .invalidAlgorithm(let text): "\(text.debugDescription) is not an ID token algorithm: ES256 or RS256"
        case .invalidUser(let text): "\(text.debugDescription) is not a username"
        }
    }
}
