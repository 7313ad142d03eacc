/// Why a captcha was refused. Closed: `CaptchaError+Problem.swift` maps each case to one problem type.
public enum CaptchaError: Error, Equatable, Sendable {
    /// The captcha policy asks for a solution and none was sent.
    case required
    /// The solution was malformed, wrong, expired, not ours, or already used.
    case invalid(String)
}
