/// What an audited event came to. Closed: each case is written as the words the audit log shows
/// (`AuditEvent.outcome`); the ones with a method or a state name it.
enum AuditOutcome: Sendable, Equatable {
    case success
    /// A sign-in or re-authentication finished by its second factor: `success-push`, `success-code`, …
    case succeeded(via: SecondFactorMethod)
    case wrongPassword
    case wrongPasswordDelayed
    case wrongPasswordLocked
    /// Refused without a password check: the account is delayed or locked.
    case refusedDelayed
    case refusedLocked
    /// A sign-in or re-authentication whose factors passed, but what it began with changed meanwhile
    /// (the account's password, or the passkey it used was removed): no session, nothing marked.
    case refusedSuperseded
    /// A correct password with a second factor still to finish: not a success yet.
    case secondFactorPending
    /// The second factor of a sign-in failed for good: `second-factor-denied`, `-wrong-number`, …
    case secondFactorFailed(MFATransaction.Failure)
    /// A second factor was accepted (`approved-push`, `approved-totp`, …) or a wrong code given.
    case approved(via: SecondFactorMethod)
    case wrongCode(via: SecondFactorMethod)
    case badSignature
    /// A passkey assertion was refused (a bad signature, another origin, no user verification, …).
    case wrongPasskey
    /// The refused passkey assertion that set the delay or the lock.
    case wrongPasskeyDelayed
    case wrongPasskeyLocked
    /// A device-bound passkey's signature counter did not increase: possibly a cloned authenticator.
    case passkeyCounterNotIncreasing
    case renamed
    case removed
    /// A registration the rules refused (its ceremony existed and was spent).
    case refused
    /// A device revoked by its own revocation token: its browser's key gate locked it out.
    case selfRevoked
    case revocationTokenSet
    /// A key-gate event the browser reported (`KeyGateEvent`, values checked against closed sets).
    case gate(event: String, method: String)
    case created
    /// A pairing grant declined by the device it was for (PingOne's `PairingObject.deny()`).
    case declined
    case disabled
    case enrollStarted
    case enrolled
    case generated
    case allowed
    case disallowed
    /// New number-matching settings: `ENTER_MANUALLY-2`, `SELECT_NUMBER-3`, …
    case numberMatching(NumberMatching.Kind, digits: Int)
    /// An OpenID Connect refusal or reuse, in the spec's words (`login_required`, `code-reused`, …).
    case oidc(String)
    /// An authenticator's answer to an authentication code and the state it left: `claim-claimed`, …
    case authenticationCode(MFAService.AuthCodeAction, AuthenticationCode.Status)

    /// The words stored and shown.
    var text: String {
        switch self {
        case .success: "success"
        case .succeeded(let method): "success-\(method.rawValue)"
        case .wrongPassword: "wrong-password"
        case .wrongPasswordDelayed: "wrong-password-delayed"
        case .wrongPasswordLocked: "wrong-password-locked"
        case .refusedDelayed: "refused-delayed"
        case .refusedLocked: "refused-locked"
        case .refusedSuperseded: "refused-superseded"
        case .secondFactorPending: "password-ok-second-factor-pending"
        case .secondFactorFailed(let why): "second-factor-\(why.rawValue)"
        case .approved(let method): "approved-\(method.rawValue)"
        case .wrongCode(let method): "wrong-\(method.rawValue)"
        case .badSignature: "bad-signature"
        case .wrongPasskey: "wrong-passkey"
        case .wrongPasskeyDelayed: "wrong-passkey-delayed"
        case .wrongPasskeyLocked: "wrong-passkey-locked"
        case .refused: "refused"
        case .passkeyCounterNotIncreasing: "passkey-counter-not-increasing"
        case .renamed: "renamed"
        case .declined: "declined"
        case .removed: "removed"
        case .selfRevoked: "self-revoked"
        case .revocationTokenSet: "revocation-token-set"
        case .gate(let event, let method): "\(event)-\(method)"
        case .oidc(let words): words
        case .created: "created"
        case .disabled: "disabled"
        case .enrollStarted: "enroll-started"
        case .enrolled: "enrolled"
        case .generated: "generated"
        case .allowed: "allowed"
        case .disallowed: "disallowed"
        case .numberMatching(let kind, let digits): "\(kind.rawValue)-\(digits)"
        case .authenticationCode(let action, let status): "\(action.rawValue)-\(status.rawValue.lowercased())"
        }
    }
}

/// How a second factor was given, as the audit log names it.
enum SecondFactorMethod: String, Sendable {
    case push
    /// A passcode or a recovery code (which one is audited when it is checked).
    case code
    case totp
    case recoveryCode = "recovery-code"
    case authCode = "auth-code"
    case passkey
}
