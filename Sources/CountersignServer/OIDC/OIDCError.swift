/// An OAuth 2.0 / OpenID Connect error (RFC 6749 §4.1.2.1 and §5.2, OpenID Connect Core §3.1.2.6, RFC 7009,
/// RFC 6750): its code as the specs name it and a description that says what is wrong. Closed: the codes are
/// the specs' own.
public struct OIDCError: Error, Equatable, Sendable {
    public enum Code: String, Sendable {
        case invalidRequest = "invalid_request"
        case invalidClient = "invalid_client"
        case invalidGrant = "invalid_grant"
        case unauthorizedClient = "unauthorized_client"
        case unsupportedGrantType = "unsupported_grant_type"
        case unsupportedResponseType = "unsupported_response_type"
        case invalidScope = "invalid_scope"
        case accessDenied = "access_denied"
        case loginRequired = "login_required"
        case consentRequired = "consent_required"
        case interactionRequired = "interaction_required"
        case requestNotSupported = "request_not_supported"
        case requestURINotSupported = "request_uri_not_supported"
        case invalidToken = "invalid_token"
        case unsupportedTokenType = "unsupported_token_type"
        case serverError = "server_error"
    }

    public var code: Code
    public var description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}
