import Foundation

/// Refusals that any feature may give, whatever it is about. Closed: the HTTP edge maps each case to one
/// problem type (docs/openapi.yaml lists them); nothing here knows about HTTP.
public enum RequestError: Error, Equatable, Sendable {
    /// A field has the wrong shape; `field` names it, `reason` says what is allowed.
    case invalidField(field: String, reason: String)
    /// Too many requests of this kind from this address or account; retry after `retryAfter` seconds.
    case rateLimited(retryAfter: TimeInterval)
    /// No, an unknown, or an expired session token.
    case unauthenticated
    /// Too much work is waiting (password checks, database writes); retry in a second.
    case serverBusy
}
