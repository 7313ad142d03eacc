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
    /// The client is defined in the configuration file: it is changed there, not by `admin oidc-client`.
    case managedByConfiguration(String)
    /// The configuration file defines a client an administrator registered with `admin oidc-client add`.
    case registeredByAdmin(String)
    /// The configuration file defines the client twice.
    case definedTwice(String)
    /// `secret-sha256` is not 64 hexadecimal digits, or a confidential client has none (or a public one has one).
    case invalidSecretHash(String)

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
        case .managedByConfiguration(let id):
            "\(id.debugDescription) is defined in the server's configuration file (oidc-clients): change it there and restart"
        case .registeredByAdmin(let id):
            "the configuration file defines \(id.debugDescription), which was registered with admin oidc-client add: remove it (admin oidc-client remove \(id)) or give the file's another ID"
        case .definedTwice(let id): "the configuration file defines the client \(id.debugDescription) twice"
        case .invalidSecretHash(let id):
            "client \(id.debugDescription): a confidential client needs secret-sha256, the SHA-256 of its secret as 64 hexadecimal digits (admin oidc-client new-secret makes both); a public one has none"
        }
    }
}
