import CountersignAPI

/// The password sign-in and re-authentication ceremonies, each one call from its route: the lockout
/// gate, captcha and password (`AccountService.verify…`), then the second factor the account has
/// (`MFAService.secondFactor`), then the session, or the pending transaction the client completes with
/// its second factor (`MFARoutes`). Passkey and QR sign-ins complete through their own features.
struct SignInFlow: Sendable {
    let signIn: SignInService
    let mfa: MFAService

    enum Outcome: Sendable {
        case signedIn(NewSession)
        /// A second factor follows: the transaction the client polls and completes.
        case secondFactor(MFARequired)
    }

    enum ReauthOutcome: Sendable {
        case reauthenticated
        case secondFactor(MFARequired)
    }

    /// `POST /v1/sessions`; counts its outcome in the sign-in metrics.
    func signIn(
        username: String,
        password: String,
        captcha: String?,
        secondFactor: String?,
        origin: RequestOrigin
    ) async throws -> Outcome {
        do {
            let offerPush = try SecondFactorChoice.offerPush(secondFactor)
            let verified = try await signIn.verifySignIn(
                username: username,
                password: password,
                captcha: captcha,
                origin: origin
            )
            if let pending = try await mfa.secondFactor(after: verified, offerPush: offerPush) {
                try await signIn.pending(verified)
                ServerMetrics.signIn("second-factor")
                return .secondFactor(pending)
            }
            let session = try await signIn.completeSignIn(verified)
            ServerMetrics.signIn("success")
            return .signedIn(session)
        } catch let e as SignInError {
            ServerMetrics.signIn(Self.metricOutcome(e))
            throw e
        } catch let e as CaptchaError {
            ServerMetrics.signIn("captcha")
            throw e
        } catch let e as SignInRefusal {
            ServerMetrics.signIn(Self.metricOutcome(e))
            throw e
        } catch let e as RequestError {
            ServerMetrics.signIn(Self.metricOutcome(e))
            throw e
        }
    }

    /// `POST /v1/sessions/current/reauth`.
    func reauthenticate(
        _ auth: Authenticated,
        password: String,
        captcha: String?,
        secondFactor: String?,
        origin: RequestOrigin
    ) async throws -> ReauthOutcome {
        let offerPush = try SecondFactorChoice.offerPush(secondFactor)
        let verified = try await signIn.verifyReauthentication(
            auth,
            password: password,
            captcha: captcha,
            origin: origin
        )
        if let pending = try await mfa.secondFactor(after: verified, offerPush: offerPush) {
            try await signIn.pending(verified)
            return .secondFactor(pending)
        }
        try await signIn.completeReauthentication(verified)
        return .reauthenticated
    }

    static func metricOutcome(_ e: SignInError) -> String {
        switch e {
        case .invalidCredentials: return "invalid-credentials"
        case .wrongPassword, .superseded: return "other"
        }
    }

    static func metricOutcome(_ e: SignInRefusal) -> String {
        switch e {
        case .delayed: return "delayed"
        case .locked: return "locked"
        case .busy: return "busy"
        }
    }

    static func metricOutcome(_ e: RequestError) -> String {
        switch e {
        case .rateLimited: return "rate-limited"
        case .serverBusy: return "server-busy"
        default: return "other"
        }
    }
}
