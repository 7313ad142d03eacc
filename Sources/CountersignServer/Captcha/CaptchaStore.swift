import Foundation

/// The storage the captcha needs: solutions spent once, and the server secret its challenges are signed
/// with. Each backend's storage implements it.
public protocol CaptchaStore: ServerSecretStore {
    /// Records a captcha challenge as used; false when it already was.
    func spendCaptcha(challenge: String, expiresAt: Date) async throws -> Bool
}
