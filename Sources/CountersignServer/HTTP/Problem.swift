import CountersignAPI
import Foundation
import Hummingbird

/// An RFC 9457 problem response. `code` is stable and also the last part of `type`; clients switch on it.
struct Problem: Error, HTTPResponseError {
    let status: HTTPResponse.Status
    let code: ProblemCode
    let title: String
    let detail: String
    var extra: [String: ProblemValue] = [:]
    var headers: HTTPFields = [:]

    static let typePrefix = "https://countersign.dev/problems/"

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var object: [String: ProblemValue] = extra
        object["type"] = .string(Self.typePrefix + code.rawValue)
        object["code"] = .string(code.rawValue)
        object["title"] = .string(title)
        object["status"] = .int(status.code)
        object["detail"] = .string(detail)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var fields = headers
        fields[.contentType] = "application/problem+json"
        fields[.cacheControl] = "no-store"
        return Response(
            status: status,
            headers: fields,
            body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(object)))
        )
    }
}

enum ProblemValue: Encodable {
    case string(String)
    case int(Int)
    case bool(Bool)
    case keys([DeviceKeyRef])
    case strings([String])
    func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .string(let s): try c.encode(s)
        case .int(let i): try c.encode(i)
        case .bool(let b): try c.encode(b)
        case .keys(let k): try c.encode(k)
        case .strings(let s): try c.encode(s)
        }
    }
}

extension Problem {
    static func malformed(_ detail: String) -> Problem {
        Problem(status: .badRequest, code: .malformedRequest, title: "Malformed request", detail: detail)
    }

    static let notFound = Problem(
        status: .notFound,
        code: .notFound,
        title: "Not found",
        detail: "There is nothing at this address; see /openapi.yaml."
    )

    /// `GET /metrics` on a server started without a metrics token.
    static let metricsOff = Problem(
        status: .notFound,
        code: .notFound,
        title: "Not found",
        detail:
            "Metrics are off: start the server with --metrics-token-file FILE (COUNTERSIGN_METRICS_TOKEN_FILE) and scrape with that token as a bearer token."
    )

    /// `GET /metrics` without the configured bearer token.
    static var metricsToken: Problem {
        var p = Problem(
            status: .unauthorized,
            code: .unauthenticated,
            title: "Metrics token required",
            detail: "Send the token of the server's --metrics-token-file as `Authorization: Bearer …`."
        )
        p.headers[.wwwAuthenticate] = "Bearer realm=\"metrics\""
        return p
    }

    static func tooLarge(_ limit: Int) -> Problem {
        Problem(
            status: .contentTooLarge,
            code: .payloadTooLarge,
            title: "Request body too large",
            detail: "The body exceeds \(limit) bytes."
        )
    }

    /// Domain errors become HTTP here and in the inits below, one per error type. `now` is the server's
    /// clock, for `Retry-After`.
    init(_ error: AccountError, now: Date) {
        let iso = ISO8601DateFormatter()
        switch error {
        case .usernameTaken:
            self.init(
                status: .conflict,
                code: .usernameTaken,
                title: "Username taken",
                detail: "That username is already registered; choose another."
            )
        case .captchaRequired:
            self.init(
                status: .badRequest,
                code: .captchaRequired,
                title: "Captcha required",
                detail: "Solve a challenge from GET /v1/captcha and send the solution as the captcha field."
            )
        case .captchaInvalid(let why):
            self.init(
                status: .badRequest,
                code: .captchaInvalid,
                title: "Captcha invalid",
                detail: "\(why); fetch a new challenge from GET /v1/captcha."
            )
        case .invalidCredentials(let until, let locked):
            var extra: [String: ProblemValue] = [:]
            var detail = "The username or password is wrong."
            if locked {
                extra["locked"] = .bool(true)
                detail += " Too many failures: the account is now locked until an administrator unlocks it."
            } else if let until {
                extra["retryAt"] = .string(WireDate.format(until))
                detail += " Too many failures: sign-in is refused until \(iso.string(from: until))."
            }
            self.init(
                status: .unauthorized,
                code: .invalidCredentials,
                title: "Invalid credentials",
                detail: detail,
                extra: extra
            )
        case .signInDelayed(let until):
            self.init(
                status: .tooManyRequests,
                code: .signInDelayed,
                title: "Sign-in delayed",
                detail: "Too many failed sign-ins; try again after \(iso.string(from: until)).",
                extra: ["retryAt": .string(WireDate.format(until))]
            )
            headers[.retryAfter] = "\(max(1, Int(until.timeIntervalSince(now).rounded(.up))))"
        case .accountLocked:
            self.init(
                status: .init(code: 423, reasonPhrase: "Locked"),
                code: .accountLocked,
                title: "Account locked",
                detail: "Too many failed sign-ins; an administrator must unlock the account."
            )
        case .signInBusy:
            self.init(
                status: .tooManyRequests,
                code: .signInBusy,
                title: "Sign-in busy",
                detail: "Other sign-ins for this username are being checked; retry in a second."
            )
            headers[.retryAfter] = "1"
        case .reauthenticationRequired(let minutes):
            self.init(
                status: .unauthorized,
                code: .reauthenticationRequired,
                title: "Re-authentication required",
                detail:
                    "This operation needs a full authentication within the last \(minutes) minutes (the password, and the second factor if the account has one): POST /v1/sessions/current/reauth first.",
                extra: ["intervalMinutes": .int(minutes)]
            )
        case .wrongPassword:
            self.init(
                status: .forbidden,
                code: .wrongPassword,
                title: "Wrong password",
                detail: "The current password is wrong."
            )
        }
    }

    init(_ error: RequestError) {
        switch error {
        case .invalidField(let field, let reason):
            self.init(
                status: .unprocessableContent,
                code: .invalidField,
                title: "Invalid field",
                detail: "\(field): \(reason)",
                extra: ["field": .string(field)]
            )
        case .rateLimited(let after):
            self.init(
                status: .tooManyRequests,
                code: .rateLimited,
                title: "Too many requests",
                detail: "Too many attempts from your address; retry in \(Int(after.rounded(.up))) seconds."
            )
            headers[.retryAfter] = "\(max(1, Int(after.rounded(.up))))"
        case .unauthenticated:
            self.init(
                status: .unauthorized,
                code: .unauthenticated,
                title: "Not signed in",
                detail: "Send a valid session token as `Authorization: Bearer …`; sign in with POST /v1/sessions."
            )
            headers[.wwwAuthenticate] = "Bearer"
        case .serverBusy:
            self.init(
                status: .serviceUnavailable,
                code: .serverBusy,
                title: "Server busy",
                detail: "Too many password checks are waiting; retry in a second."
            )
            headers[.retryAfter] = "1"
        }
    }
}

extension Problem {
    init(_ error: DeviceError) {
        switch error {
        case .challengeInvalid:
            self.init(
                status: .badRequest,
                code: .challengeInvalid,
                title: "Challenge invalid",
                detail: "The challenge is unknown, used, expired or for another account or device; ask for a new one."
            )
        case .badSignature(let why):
            self.init(status: .unprocessableContent, code: .badSignature, title: "Bad signature", detail: why)
        case .deviceLimit(let n):
            self.init(
                status: .conflict,
                code: .deviceLimit,
                title: "Too many devices",
                detail: "The account already has \(n) active devices; revoke one (DELETE /v1/devices/{id}) first.",
                extra: ["limit": .int(n)]
            )
        case .keyInUse(let why):
            self.init(status: .conflict, code: .keyInUse, title: "Key in use", detail: why)
        case .notFound:
            self = .notFound
        case .revoked:
            self.init(
                status: .forbidden,
                code: .deviceRevoked,
                title: "Device revoked",
                detail: "This device was revoked; register new keys as a new device."
            )
        case .unauthenticated:
            self.init(
                status: .unauthorized,
                code: .unauthenticated,
                title: "No device session",
                detail:
                    "Send a device session token (csd_…) as `Authorization: Bearer …`; open one with POST /v1/device-sessions."
            )
            headers[.wwwAuthenticate] = "Bearer"
        case .notAMessagingDevice:
            self.init(
                status: .forbidden,
                code: .notAMessagingDevice,
                title: "Not a messaging device",
                detail:
                    "This device session is an authenticator's: it approves sign-ins and holds no mail. Send and read from a messaging device (countersign device init)."
            )
        }
    }

    init(_ error: RelayError) {
        switch error {
        case .invalidEnvelope(let why):
            self.init(
                status: .unprocessableContent,
                code: .invalidEnvelope,
                title: "Invalid envelope",
                detail: "The envelope is not a Countersign message envelope: \(why)."
            )
        case .forgedSender(let why):
            self.init(status: .unprocessableContent, code: .badSignature, title: "Bad signature", detail: why)
        case .unknownRecipients(let names):
            self.init(
                status: .unprocessableContent,
                code: .unknownRecipient,
                title: "Unknown recipient",
                detail: "No account is named \(names.joined(separator: ", ")).",
                extra: ["usernames": .strings(names)]
            )
        case .deviceMismatch(let missing, let extra):
            self.init(
                status: .conflict,
                code: .deviceMismatch,
                title: "Devices changed",
                detail:
                    "The envelope must be sealed to exactly the current devices of its recipients and of the sender: "
                    + "\(missing.count) missing, \(extra.count) extra. Fetch GET /v1/users/{username}/devices, check what changed, seal again.",
                extra: ["missingDevices": .keys(missing), "extraDevices": .keys(extra)]
            )
        case .messageIDReused:
            self.init(
                status: .conflict,
                code: .messageIDReused,
                title: "Message ID reused",
                detail: "Another envelope was already sent with this message ID; seal the message again (a fresh ID)."
            )
        case .notFound:
            self = .notFound
        case .alreadyDelivered:
            self.init(
                status: .conflict,
                code: .alreadyDelivered,
                title: "Already delivered",
                detail: "The message is already visible to its recipients and can no longer be cancelled."
            )
        case .sendRateLimited(let perMinute, let after):
            self.init(
                status: .tooManyRequests,
                code: .rateLimited,
                title: "Sending too fast",
                detail:
                    "This account may send \(perMinute) messages a minute; retry in \(Int(after.rounded(.up))) seconds."
            )
            headers[.retryAfter] = "\(max(1, Int(after.rounded(.up))))"
        case .quotaExceeded(let limit, let after):
            let mib = limit >> 20
            self.init(
                status: .tooManyRequests,
                code: .messageQuotaExceeded,
                title: "Message storage quota reached",
                detail:
                    "This account's stored messages would exceed its quota of \(mib) MiB; the oldest expires in about "
                    + "\(Int((after / 3600).rounded(.up))) hours. Cancel delayed messages or send less.",
                extra: ["quotaBytes": .int(Int(limit))]
            )
            headers[.retryAfter] = "\(max(1, Int(after.rounded(.up))))"
        }
    }
}

extension Problem {
    init(_ error: MFAError) {
        switch error {
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
        case .signInSuperseded:
            self.init(
                status: .conflict,
                code: .mfaSignInSuperseded,
                title: "Sign-in superseded",
                detail:
                    "The password changed after this sign-in began, or its session was not collected within two minutes; sign in again."
            )
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
