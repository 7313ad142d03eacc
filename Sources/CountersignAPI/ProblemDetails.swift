#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The stable problem codes (RFC 9457 `code`, also the last segment of `type`). Clients switch on these;
/// the server emits nothing else (OpenAPITests checks both this list and openapi.yaml).
public enum ProblemCode: String, Codable, CaseIterable, Sendable {
    case malformedRequest = "malformed-request"
    case payloadTooLarge = "payload-too-large"
    case unsupportedMediaType = "unsupported-media-type"
    case methodNotAllowed = "method-not-allowed"
    case notFound = "not-found"
    case invalidField = "invalid-field"
    case usernameTaken = "username-taken"
    case captchaRequired = "captcha-required"
    case captchaInvalid = "captcha-invalid"
    case invalidCredentials = "invalid-credentials"
    case signInDelayed = "sign-in-delayed"
    case accountLocked = "account-locked"
    case signInBusy = "sign-in-busy"
    case rateLimited = "rate-limited"
    case unauthenticated
    case reauthenticationRequired = "reauthentication-required"
    case wrongPassword = "wrong-password"
    case serverBusy = "server-busy"
    case `internal`
    // Devices and messages
    case forbidden
    case challengeInvalid = "challenge-invalid"
    case badSignature = "bad-signature"
    case deviceLimit = "device-limit"
    case deviceRevoked = "device-revoked"
    case keyInUse = "key-in-use"
    case alreadyVouched = "already-vouched"
    case unknownRecipient = "unknown-recipient"
    case deviceMismatch = "device-mismatch"
    case messageIDReused = "message-id-reused"
    case invalidEnvelope = "invalid-envelope"
    case alreadyDelivered = "already-delivered"
    case messageQuotaExceeded = "message-quota-exceeded"
    case pairingKeyInvalid = "pairing-key-invalid"
    case tooManyPairingKeys = "too-many-pairing-keys"
    case mfaNotCompleted = "mfa-not-completed"
    case mfaAlreadyCollected = "mfa-already-collected"
    case mfaSignInSuperseded = "mfa-sign-in-superseded"
    case notAnAuthenticator = "not-an-authenticator"
    case notAMessagingDevice = "not-a-messaging-device"
    case answerRefused = "answer-refused"
    case authCodeInvalid = "auth-code-invalid"
    case passcodeInvalid = "passcode-invalid"
    case noPendingEnrollment = "no-pending-enrollment"
    case lastSecondFactor = "last-second-factor"
    case passkeyCeremonyInvalid = "passkey-ceremony-invalid"
    case passkeyRefused = "passkey-refused"
    case passkeyTaken = "passkey-taken"
    case tooManyPasskeys = "too-many-passkeys"
    case noPasskeys = "no-passkeys"
    case staySignedInOff = "stay-signed-in-off"
    case bindingTooLate = "binding-too-late"
    case signInEnded = "sign-in-ended"
    // Notifications
    case pushEndpointRefused = "push-endpoint-refused"
    case apnsNotConfigured = "apns-not-configured"
}

/// A problem response as a client reads it. `code` is a string so that a newer server's codes still
/// decode; `kind` maps it to the closed list, `nil` for codes this client does not know.
public struct ProblemDetails: Codable, Equatable, Sendable, CustomStringConvertible {
    public var type: String
    public var code: String
    public var title: String
    public var status: Int
    public var detail: String
    public var field: String?
    public var retryAt: Date?
    public var locked: Bool?
    /// With `invalid-credentials`: one more failure locks the account.
    public var oneMoreLocks: Bool?
    /// With `account-locked` (and the failure that locked): whom to ask to unlock it, if the server says.
    public var contact: String?
    public var intervalMinutes: Int?
    /// 409 `device-mismatch`: what the envelope must add and drop.
    public var missingDevices: [DeviceKeyRef]?
    /// PingOne's error number (10000–10020) where one fits.
    public var pingOneError: Int?
    public var extraDevices: [DeviceKeyRef]?
    /// With `passkey-refused` and `answer-refused`: why, as a word a client can switch on.
    public var reason: String?

    public var kind: ProblemCode? { ProblemCode(rawValue: code) }
    public var description: String { detail }
}
