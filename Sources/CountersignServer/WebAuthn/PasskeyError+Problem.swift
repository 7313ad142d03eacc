import CountersignAPI
import Foundation
import Hummingbird

/// How the passkey feature's refusals read as problems.
extension Problem {
    init(_ error: PasskeyError) {
        func refused(_ reason: String, _ detail: String) -> Problem {
            Problem(
                status: .unprocessableContent,
                code: .passkeyRefused,
                title: "Passkey refused",
                detail: detail,
                extra: ["reason": .string(reason)]
            )
        }
        switch error {
        case .ceremonyNotFound:
            self.init(
                status: .conflict,
                code: .passkeyCeremonyInvalid,
                title: "Passkey request unknown",
                detail:
                    "The passkey request is unknown, already answered, older than 5 minutes, or another session's; start again."
            )
        case .clientData(let why):
            self = refused("client-data", "The browser's client data does not fit this request: \(why).")
        case .prfResultsSent:
            self = refused(
                "prf-results",
                "The answer carries the passkey's PRF output (clientExtensionResults.prf.results), the key gate's secret, which must never leave the browser; nothing was checked or stored. Send the credential without clientExtensionResults (docs/SPEC.md §14.7)."
            )
        case .authenticator(let why):
            self = refused("authenticator", "The authenticator's answer does not fit this server: \(why).")
        case .data(let why):
            self = refused("data", "The passkey's answer is malformed or its signature is wrong: \(why).")
        case .unknownCredential:
            self = refused(
                "unknown-credential",
                "This passkey is not registered for this account here (it may have been removed); sign in another way."
            )
        case .backupEligibilityChanged:
            self = refused(
                "backup-eligibility",
                "The passkey's backup eligibility changed since it was registered, so it is not the same credential."
            )
        case .counterNotIncreasing:
            // The counts stay out of the answer: they would tell a copy's holder what to send next.
            self = refused(
                "counter",
                "This device-bound passkey's signature counter did not increase: it may have been copied. The attempt is in the audit log; remove the passkey if it was not you."
            )
        case .concurrentUse:
            self = refused(
                "concurrent",
                "Another sign-in with this passkey was recorded at the same moment; try again."
            )
        case .credentialTaken:
            self.init(
                status: .conflict,
                code: .passkeyTaken,
                title: "Passkey already registered",
                detail: "This passkey is already registered to an account here."
            )
        case .tooManyPasskeys:
            self.init(
                status: .conflict,
                code: .tooManyPasskeys,
                title: "Too many passkeys",
                detail: "An account has at most \(PasskeyRules.maxPerAccount) passkeys; remove one first."
            )
        case .invalidName:
            self.init(RequestError.invalidField(field: "name", reason: ShownName.rule))
        case .noPasskeys:
            self.init(
                status: .conflict,
                code: .noPasskeys,
                title: "No passkeys",
                detail: "This account has no passkey; use the password (or add a passkey in Settings first)."
            )
        case .notFound:
            self = .notFound
        }
    }
}
