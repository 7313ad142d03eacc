import CountersignAPI
import Hummingbird

/// How the session bindings' refusals read as problems.
extension Problem {
    init(_ error: SessionBindingError) {
        switch error {
        case .off:
            self.init(
                status: .forbidden,
                code: .staySignedInOff,
                title: "Staying signed in is off",
                detail: "This server keeps no browser signed in across reloads (COUNTERSIGN_STAY_SIGNED_IN_DAYS=0)."
            )
        case .badSignature:
            self = .badSignature(
                "the signature does not verify with publicKey over the binding message (docs/PROTOCOL.md §1.1)"
            )
        case .notThisDevice:
            self = Problem(
                RequestError.invalidField(
                    field: "deviceId",
                    reason: "an active messaging device of this account whose current signing key is publicKey"
                )
            )
        case .tooLate:
            self.init(
                status: .forbidden,
                code: .bindingTooLate,
                title: "Too late to bind",
                detail:
                    "Only a session that signed in or fully re-authenticated in the last 10 minutes can be kept signed in; re-authenticate (POST /v1/sessions/current/reauth) and bind again."
            )
        case .challengeInvalid:
            self.init(
                status: .badRequest,
                code: .challengeInvalid,
                title: "Challenge invalid",
                detail: "The nonce is unknown, used, expired or for another binding; ask for a new one."
            )
        case .ended:
            self.init(
                status: .unauthorized,
                code: .signInEnded,
                title: "Signed-in browser ended",
                detail:
                    "This browser is no longer kept signed in: it signed out, went unused too long, or the password was changed, the account locked, a passkey removed or the device revoked. Sign in again."
            )
        }
    }
}
