/// What an audited event was: the `kind` of `AuditEvent` (docs/openapi.yaml lists them).
enum AuditKind: String, CaseIterable, Sendable {
    case accountCreated = "account-created"
    case signIn = "sign-in"
    case signOut = "sign-out"
    case signOutEverywhere = "sign-out-everywhere"
    case reauth
    case passwordChange = "password-change"
    case settingsChange = "settings-change"
    case deviceRegister = "device-register"
    case deviceSession = "device-session"
    case deviceRename = "device-rename"
    case deviceRevoke = "device-revoke"
    case deviceRotate = "device-rotate"
    case deviceVouch = "device-vouch"
    case approverEndorse = "approver-endorse"
    case deviceKeyProof = "device-key-proof"
    case mfa
    case mfaSettings = "mfa-settings"
    case mfaPairingKey = "mfa-pairing-key"
    case mfaPair = "mfa-pair"
    case mfaUnpair = "mfa-unpair"
    case mfaTOTP = "mfa-totp"
    case mfaRecoveryCodes = "mfa-recovery-codes"
    case mfaPush = "mfa-push"
    case authCode = "auth-code"
    case passkey
    case keyGate = "key-gate"
    case sessionBound = "session-bound"
    case sessionResumed = "session-resumed"
    /// OpenID Connect: an authorization answered (a code, or a refusal), a consent, a token grant or reuse.
    case oidcAuthorize = "oidc-authorize"
    case oidcConsent = "oidc-consent"
    case oidcToken = "oidc-token"
    case oidcLogout = "oidc-logout"
}
