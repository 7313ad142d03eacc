import Foundation

/// Why an account operation was refused (what any feature may refuse is `RequestError`; the lockout
/// gate's refusals are `SignInRefusal`). Closed: the HTTP edge maps each case to one problem type
/// (docs/openapi.yaml lists them); nothing here knows about HTTP.
public enum AccountError: Error, Equatable, Sendable {
    case usernameTaken
    /// The captcha policy asks for a solution and none was sent.
    case captchaRequired
    /// The solution was malformed, wrong, expired, not ours, or already used.
    case captchaInvalid(String)
    /// Wrong username or password (never which). `delayedUntil`/`locked` tell what this failure caused.
    case invalidCredentials(delayedUntil: Date?, locked: Bool)
    /// The operation needs a password check within the account's re-authentication interval.
    case reauthenticationRequired(intervalMinutes: Int)
    /// The current password given to a password change or re-authentication is wrong.
    case wrongPassword
}
