import CountersignAPI
import Foundation
import Hummingbird

/// How the MFA feature's refusals read as problems.
extension Problem {
    init(_ error: MFAError) {
        switch error {
        case .badSignature(let why): self = .badSignature(why)
        case .deviceLimit(let n): self = .deviceLimit(n)
        case .keyInUse(let why): self = .keyInUse(why)
        case .pairingKeyInvalid:
            self.init(
                status: .unprocessableContent,
                code: .pairingKeyInvalid,
                title: "Pairing key invalid",
                detail:
                    "The pairing key is wrong, used or expired; create a new one (countersign account mfa pairing-key).",
                extra: ["pingOneError": .int(10005)]
            )
        case .tooManyPairingKeys:
            self.init(
                status: .conflict,
                code: .tooManyPairingKeys,
                title: "Too many pairing keys",
                detail: "This account already has 3 open pairing keys; use one or wait 10 minutes."
            )
        case .noBinding:
            self.init(
                status: .unauthorized,
                code: .unauthenticated,
                title: "No binding secret",
                detail:
                    "Send the binding secret (csb_…) from the 202 sign-in answer or the auth-code answer as `Authorization: Bearer …`."
            )
            headers[.wwwAuthenticate] = "Bearer"
        case .transactionNotFound:
            self = .notFound
        case .notCompleted(let status):
            self.init(
                status: .conflict,
                code: .mfaNotCompleted,
                title: "Second factor not completed",
                detail: "The sign-in is \(status); the session is released only when it is COMPLETED.",
                extra: ["transactionStatus": .string(status)]
            )
        case .alreadyCollected:
            self.init(
                status: .conflict,
                code: .mfaAlreadyCollected,
                title: "Already collected",
                detail: "This sign-in's session was already handed out; sign in again."
            )
        case .signInSuperseded: self = .signInSuperseded
        case .notAnAuthenticator:
            self.init(
                status: .forbidden,
                code: .notAnAuthenticator,
                title: "Not an authenticator",
                detail:
                    "This device session is not a paired authenticator's; pair with countersign authenticator pair.",
                extra: ["pingOneError": .int(10008)]
            )
        case .answerRefused(let why):
            self.init(
                status: .conflict,
                code: .answerRefused,
                title: "Answer refused",
                detail: "The answer changed nothing: \(why).",
                extra: ["reason": .string(why), "pingOneError": .int(why == "expired" ? 10009 : 10012)]
            )
        case .authCodeInvalid:
            self.init(
                status: .unprocessableContent,
                code: .authCodeInvalid,
                title: "Authentication code invalid",
                detail:
                    "The code is unknown, expired, or claimed by another authenticator; ask the sign-in screen for a new one.",
                extra: ["pingOneError": .int(10011)]
            )
        case .passcodeInvalid:
            self.init(
                status: .unprocessableContent,
                code: .passcodeInvalid,
                title: "Passcode invalid",
                detail:
                    "The passcode is not the current one for this secret; check the device's clock and try the next code.",
                extra: ["pingOneError": .int(10010)]
            )
        case .tooManyAttempts(let wait):
            self.init(
                status: .tooManyRequests,
                code: .rateLimited,
                title: "Too many attempts",
                detail: "Too many passcodes tried for this enrollment; try again in \(Int(wait.rounded(.up))) seconds."
            )
            headers[.retryAfter] = String(Int(wait.rounded(.up)))
        case .tooManyPendingSignIns(let wait):
            self.init(
                status: .tooManyRequests,
                code: .rateLimited,
                title: "Too many sign-ins waiting",
                detail:
                    "Too many sign-ins of this account wait for a second factor; finish one or try again in \(Int(wait.rounded(.up))) seconds."
            )
            headers[.retryAfter] = String(Int(wait.rounded(.up)))
        case .noPendingEnrollment:
            self.init(
                status: .conflict,
                code: .noPendingEnrollment,
                title: "Nothing to confirm",
                detail: "Start with POST /v1/me/mfa/totp (countersign account mfa totp enroll)."
            )
        case .lastSecondFactor:
            self.init(
                status: .conflict,
                code: .lastSecondFactor,
                title: "Last second factor",
                detail:
                    "This authenticator is the account's only second factor; pair another or add an authenticator app first, or turn multi-factor sign-in off from a signed-in session (countersign account mfa disable)."
            )
        }
    }
}
