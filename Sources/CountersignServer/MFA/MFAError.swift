import Foundation

/// Why a multi-factor operation was refused. Closed; `Problem.init(_:)` maps each case to one problem
/// type, with PingOne's error number where one fits (`pingOneError`).
public enum MFAError: Error, Equatable, Sendable {
    /// A pairing key that is wrong, used or expired: one answer for all three (PingOne 10005).
    case pairingKeyInvalid
    /// Already 3 open pairing keys; wait for one to be used or to expire.
    case tooManyPairingKeys
    /// No binding secret (`csb_…`) was sent as the bearer.
    case noBinding
    /// No transaction (or authentication code) with this id for this binding, or for this device's account.
    case transactionNotFound
    /// The session can be collected only after COMPLETED; the status now.
    case notCompleted(String)
    case alreadyCollected
    /// The account's password changed after this sign-in began (or the sign-in's session was not
    /// collected in time): it gives no session; sign in again.
    case signInSuperseded
    /// The device session is not an authenticator's (PingOne 10008 deviceIsNotPaired).
    case notAnAuthenticator
    /// The answer changed nothing: `finished`, `expired` (PingOne 10009), `notThisChallenge`, `pushNotOffered`.
    case answerRefused(String)
    /// An authentication code that is unknown, expired, or claimed by another authenticator (PingOne 10011).
    case authCodeInvalid
    /// A passcode that does not confirm an authenticator-app enrollment (PingOne 10010).
    case passcodeInvalid
    /// Too many confirmation attempts for an enrollment: wait.
    case tooManyAttempts(retryAfter: TimeInterval)
    /// As many sign-ins of this account wait for a second factor as are allowed; one expires within `retryAfter`.
    case tooManyPendingSignIns(retryAfter: TimeInterval)
    /// `totp confirm` without `totp enroll` first.
    case noPendingEnrollment
    /// An authenticator may not unpair itself while it is the account's only second factor.
    case lastSecondFactor
    /// A pairing request or an answer whose signature does not verify with the key it names.
    case badSignature(String)
    /// Pairing would give the account more than `limit` active devices.
    case deviceLimit(Int)
    /// A key of the authenticator being paired is already registered (keys are never reused).
    case keyInUse(String)
}
