import Foundation

/// Why an account operation was refused (what any feature may refuse is `RequestError`; the lockout
/// gate's refusals are `SignInRefusal`). Closed: the HTTP edge maps each case to one problem type
/// (docs/openapi.yaml lists them); nothing here knows about HTTP.
public enum AccountError: Error, Equatable, Sendable {
    case usernameTaken
}
