import CountersignAPI
import Foundation

/// Multi-factor sign-in from the signing-in side and the account's settings (docs/PROTOCOL.md §3).
extension CountersignClient {
    // MARK: Finishing a sign-in

    /// The transaction now; with `wait` (1 to 30 s) the answer comes when its status changes.
    public func mfaTransaction(_ pending: MFARequired, wait: Int = 0) async throws -> MFATransactionView {
        try await longPoll(pending.path, wait: wait, as: MFATransactionView.self, credential: .bearer(pending.binding))
    }

    /// A passcode: an authenticator app's, or a paired authenticator's own.
    public func submitPasscode(_ code: String, for pending: MFARequired) async throws -> MFATransactionView {
        try await submit(code, to: pending.path + "/otp", binding: pending.binding)
    }

    public func submitRecoveryCode(_ code: String, for pending: MFARequired) async throws -> MFATransactionView {
        try await submit(code, to: pending.path + "/recovery-code", binding: pending.binding)
    }

    private func submit(_ code: String, to path: String, binding: String) async throws -> MFATransactionView {
        try await send(
            "POST",
            path,
            body: MFACodeRequest(code: code),
            as: MFATransactionView.self,
            credential: .bearer(binding)
        )
    }

    /// The session of a COMPLETED sign-in (once); this client keeps it.
    @discardableResult
    public func completeSignIn(_ pending: MFARequired) async throws -> SignedInSession {
        adopt(
            try await send(
                "POST",
                pending.path + "/session",
                as: SignedInSession.self,
                credential: .bearer(pending.binding)
            )
        )
    }

    /// Finishes a COMPLETED re-authentication (from `reauthenticate(password:)`): this client's session
    /// counts as freshly authenticated.
    public func completeReauthentication(_ pending: MFARequired) async throws {
        try await send("POST", pending.path + "/session", credential: .bearer(pending.binding))
    }

    /// Waits (long polls) until the sign-in leaves PUSH_CONFIRMATION_REQUIRED, then returns its view.
    public func waitForApproval(_ pending: MFARequired) async throws -> MFATransactionView {
        var view = pending.transaction
        while view.status == "PUSH_CONFIRMATION_REQUIRED" {
            try Task.checkCancellation()
            view = try await mfaTransaction(pending, wait: 25)
        }
        return view
    }

    // MARK: QR sign-in (authentication codes), the waiting screen's side

    public func createAuthCode(userApproval: String = "REQUIRED") async throws -> AuthCodeCreated {
        try await send(
            "POST",
            "/v1/auth-codes",
            body: AuthCodeRequest(userApproval: userApproval),
            as: AuthCodeCreated.self
        )
    }

    /// The code's state now; with `wait` (1 to 30 s) the answer comes when its status changes.
    public func authCodeState(_ created: AuthCodeCreated, wait: Int = 0) async throws -> AuthCodeState {
        try await longPoll(
            "/v1/auth-codes/current",
            wait: wait,
            as: AuthCodeState.self,
            credential: .bearer(created.binding)
        )
    }

    /// The session of a COMPLETED authentication code (once); this client keeps it.
    @discardableResult
    public func completeAuthCodeSignIn(_ created: AuthCodeCreated) async throws -> SignedInSession {
        adopt(
            try await send(
                "POST",
                "/v1/auth-codes/current/session",
                as: SignedInSession.self,
                credential: .bearer(created.binding)
            )
        )
    }

    // MARK: The account's second factors (account session)

    public func mfaStatus() async throws -> MFAStatus {
        try await send("GET", "/v1/me/mfa", as: MFAStatus.self, credential: .account)
    }

    public func createPairingKey() async throws -> PairingKeyResponse {
        try await send("POST", "/v1/me/mfa/pairing-keys", as: PairingKeyResponse.self, credential: .account)
    }

    public func enrollTOTP() async throws -> TOTPEnrollment {
        try await send("POST", "/v1/me/mfa/totp", as: TOTPEnrollment.self, credential: .account)
    }

    public func confirmTOTP(code: String) async throws -> MFAStatus {
        try await send(
            "POST",
            "/v1/me/mfa/totp/confirm",
            body: MFACodeRequest(code: code),
            as: MFAStatus.self,
            credential: .account
        )
    }

    public func regenerateRecoveryCodes() async throws -> [String] {
        try await send("POST", "/v1/me/mfa/recovery-codes", as: RecoveryCodeList.self, credential: .account).codes
    }

    public func updateMFASettings(_ settings: MFASettings) async throws -> MFAStatus {
        try await send("PUT", "/v1/me/mfa/settings", body: settings, as: MFAStatus.self, credential: .account)
    }

    /// Unpairs every authenticator, drops the authenticator app and the recovery codes.
    public func disableMFA() async throws {
        try await send("DELETE", "/v1/me/mfa", credential: .account)
    }
}

extension MFARequired {
    /// The transaction's own routes (`/session`, `/otp`, `/recovery-code` below it), whose credential is
    /// `binding`.
    var path: String { "/v1/mfa/transactions/\(transaction.id)" }
}
