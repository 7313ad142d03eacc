import ArgumentParser
import CountersignClient
import CountersignQR
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Finishing a sign-in that needs a second factor (docs/PROTOCOL.md §3), for `account login`.
enum MFALogin {
    /// The session of a sign-in the SDK reported as pending: with a passcode or a recovery code when one is
    /// given, else by waiting for the push approval, showing the number to match.
    static func finish(
        _ client: CountersignClient,
        _ pending: MFARequired,
        otp: String?,
        recoveryCode: String?
    ) async throws -> SignedInSession {
        try await settle(client, pending, otp: otp, recoveryCode: recoveryCode, what: "sign-in", again: "sign in again")
        return try await client.completeSignIn(pending)
    }

    /// A re-authentication's second factor (an account with one: the password alone is not enough), then
    /// the re-authentication itself.
    static func reauthenticate(
        _ client: CountersignClient,
        _ pending: MFARequired,
        otp: String?,
        recoveryCode: String?
    ) async throws {
        // The number on stderr: the command's own output (a pairing key on its first line…) stays parseable.
        try await settle(
            client,
            pending,
            otp: otp,
            recoveryCode: recoveryCode,
            what: "re-authentication",
            again: "run the command again",
            numberOnStderr: true
        )
        try await client.completeReauthentication(pending)
    }

    /// Drives a pending second factor to COMPLETED, or throws in the CLI's words (`what` names the
    /// request: sign-in or re-authentication; `again` says how to retry).
    private static func settle(
        _ client: CountersignClient,
        _ pending: MFARequired,
        otp: String?,
        recoveryCode: String?,
        what: String,
        again: String,
        numberOnStderr: Bool = false
    ) async throws {
        let tx = pending.transaction
        var view: MFATransactionView
        if let otp {
            view = try await code(again: again) {
                try await client.submitPasscode(otp.filter { $0 != " " }, for: pending)
            }
            try refuseOpen(
                view,
                what: "passcode",
                request: what,
                hint: "a passcode works once: wait for the next one (at most 30 s)"
            )
        } else if let recoveryCode {
            view = try await code(again: again) { try await client.submitRecoveryCode(recoveryCode, for: pending) }
            try refuseOpen(view, what: "recovery code", request: what, hint: "each recovery code works once")
        } else if tx.status == "PUSH_CONFIRMATION_REQUIRED", let matching = tx.numberMatching {
            // The number is the server's text: escaped like the rest of what it says.
            let number = Terminal.printable(matching.number)
            if numberOnStderr {
                Terminal.warn("Number to match: \(number)")
            } else {
                print("Number to match: \(number)")
            }
            fflush(nil)
            let how = matching.type == "SELECT_NUMBER" ? "pick this number" : "type this number"
            Terminal.warn(
                """
                Approve the \(what) on your authenticator and \(how) there (`countersign authenticator watch`, or \
                `authenticator approve ID --number \(number)`); waiting until \(PrivateFiles.date(tx.expiresAt)). \
                Or run again with --otp CODE.
                """
            )
            view = try await client.waitForApproval(pending)
        } else {
            view = tx
        }
        switch view.status {
        case "COMPLETED":
            return
        case "FAILED":
            throw CLIError.usage(
                "\(what) FAILED: " + failure(view.failure, number: tx.numberMatching?.number, what: what)
            )
        case "PUSH_CONFIRMATION_TIMED_OUT":
            throw CLIError.usage(
                """
                \(what) PUSH_CONFIRMATION_TIMED_OUT: no answer from your authenticator before the request expired; \(again), \
                or with --otp CODE (your authenticator app's code, or `countersign authenticator otp` on the paired authenticator)
                """
            )
        default:
            // OTP_REQUIRED, or a push transaction without a number (not expected): a code is the way.
            let recovery = view.methods.contains("recoveryCode") ? " or --recovery-code CODE" : ""
            throw CLIError.usage(
                """
                \(what) \(view.status): a second factor is needed and no push approval is offered (none paired, push off on the \
                authenticator, or suspended after a \"this wasn't me\" report); run again with --otp CODE (an authenticator app's \
                code, or `countersign authenticator otp` on a paired authenticator)\(recovery)
                """
            )
        }
    }

    /// A code submission whose refusals are said in the CLI's words.
    private static func code(
        again: String,
        _ call: () async throws -> MFATransactionView
    ) async throws -> MFATransactionView {
        do {
            return try await call()
        } catch let e as ClientError where e.code == .notFound || e.code == .mfaNotCompleted {
            throw CLIError.usage("the request expired or ended (\(e)); \(again)")
        }
    }

    /// A code that left the transaction open was not accepted.
    private static func refuseOpen(_ view: MFATransactionView, what: String, request: String, hint: String) throws {
        guard ["PUSH_CONFIRMATION_REQUIRED", "OTP_REQUIRED"].contains(view.status) else { return }
        let left =
            request == "sign-in"
            ? view.attemptsLeft.map { "; \($0) attempt\($0 == 1 ? "" : "s") left for this sign-in" } ?? "" : ""
        throw CLIError.usage("the \(what) was not accepted (wrong, or already used)\(left); \(hint)")
    }

    /// `--otp` and `--recovery-code`: at most one of them, each well formed.
    static func validate(otp: String?, recoveryCode: String?) throws {
        if otp != nil, recoveryCode != nil { throw ValidationError("--otp and --recovery-code exclude each other") }
        try validatePasscode(otp)
        try validateRecoveryCode(recoveryCode)
    }

    /// `--otp`: the 6 digits an authenticator shows (spaces allowed, as apps group them), checked before
    /// anything is sent: a wrong code counts toward the account's lockout.
    private static func validatePasscode(_ code: String?) throws {
        guard let code else { return }
        let digits = code.filter { $0 != " " }
        guard digits.count == 6, digits.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }) else {
            throw ValidationError(
                """
                --otp takes the 6-digit code your authenticator app or `countersign authenticator otp` shows, not \
                "\(Terminal.printable(String(code.prefix(40))))"
                """
            )
        }
    }

    /// `--recovery-code`: 10 symbols of the codes' alphabet (docs/PROTOCOL.md §3: no 0, 1, I, L or O), in
    /// any case, spaces and dashes ignored. Checked before anything is sent, as `--otp` is.
    private static func validateRecoveryCode(_ code: String?) throws {
        guard let code else { return }
        let symbols = code.uppercased().filter { $0 != " " && $0 != "-" }
        guard symbols.count == 10, symbols.allSatisfy({ "23456789ABCDEFGHJKMNPQRSTUVWXYZ".contains($0) }) else {
            throw ValidationError(
                """
                --recovery-code takes one of the 10 codes from `countersign account mfa recovery-codes` (XXXXX-XXXXX, no 0, 1, I, L or O), \
                not "\(Terminal.printable(String(code.prefix(40))))"
                """
            )
        }
    }

    static func failure(_ why: String?, number: String?, what: String = "sign-in") -> String {
        let again = what == "sign-in" ? "sign in again" : "run the command again"
        switch why {
        case "denied": return "the \(what) was denied on your authenticator"
        case "reported":
            return """
                the \(what) was reported as \"this wasn't me\" on your authenticator; push approval is suspended until you sign in with \
                --otp CODE or --recovery-code CODE
                """
        case "wrong-number":
            return
                "the number chosen on the authenticator did not match\(number.map { " \(Terminal.printable($0))" } ?? ""); \(again) and check the number"
        case "too-many-codes": return "too many wrong codes; \(again)"
        default: return why.map { Terminal.printable($0) } ?? "the second factor was refused"
        }
    }

    /// `account login --qr`: an authentication code for an authenticator to scan or type; waits for its answer.
    static func qr(_ client: CountersignClient) async throws -> SignedInSession {
        let created = try await client.createAuthCode()
        print(Terminal.printable(created.code))
        QRText.show(created.uri)
        Terminal.warn(
            """
            On your authenticator: countersign authenticator auth \(created.code) --approve USER (or scan the code); \
            waiting until \(PrivateFiles.date(created.expiresAt))
            """
        )
        var state = try await client.authCodeState(created)
        var claimed = false
        while !["COMPLETED", "DENIED", "EXPIRED"].contains(state.status) {
            if state.status == "CLAIMED", !claimed {
                claimed = true
                Terminal.warn("claimed by an authenticator; waiting for its approval")
            }
            // A server that answers an unchanged state at once (an older one, or one shutting down) is
            // asked again after a second, not in a tight loop.
            let began = ContinuousClock.now
            let previous = state.status
            state = try await client.authCodeState(created, wait: 25)
            if state.status == previous, ContinuousClock.now - began < .seconds(1) {
                try await Task.sleep(for: .seconds(1))
            }
        }
        print(Terminal.printable(state.status))
        fflush(nil)
        guard state.status == "COMPLETED" else {
            Terminal.warn(
                state.status == "DENIED"
                    ? "the sign-in was denied on the authenticator"
                    : "nobody approved the code in time; run again for a new one"
            )
            throw ExitCode(1)
        }
        return try await client.completeAuthCodeSignIn(created)
    }
}

/// QR codes for the terminal (CountersignQR), dark background by default; COUNTERSIGN_QR=light inverts.
enum QRText {
    /// `uri` on a line of its own, then its QR code, flushed before anything waits: to copy or to scan.
    static func show(_ uri: String) {
        print(Terminal.printable(uri))
        print(render(uri), terminator: "")
        fflush(nil)
    }

    static func render(_ text: String) -> String {
        do {
            return try QRCode(text).terminal(invert: ProcessInfo.processInfo.environment["COUNTERSIGN_QR"] == "light")
        } catch {
            return "(no QR code: \(error); use the text above)\n"
        }
    }
}

extension AccountCommand {
    /// `countersign account mfa …`: the account's second factors.
    struct MFA: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "mfa",
            abstract: "Multi-factor sign-in: pair authenticators, an authenticator app, recovery codes.",
            discussion: """
                With any second factor, `account login` asks for it after the password: a push approval with number matching on \
                a paired authenticator (`countersign authenticator`), a passcode (--otp) or a recovery code (--recovery-code). \
                Changes need a recent sign-in: when the server asks, the password is read again (--password-file FILE or the terminal).
                """,
            subcommands: [Status.self, PairingKey.self, TOTP.self, RecoveryCodes.self, Settings.self, Disable.self]
        )

        /// An account-session call that may need the password again.
        static func call<T>(
            _ reauth: ReauthOptions,
            what: String,
            _ call: (CountersignClient) async throws -> T
        ) async throws -> T {
            let (client, session) = try DeviceCommand.accountClient()
            return try await DeviceCommand.withReauthentication(client, session, reauth, what: what) {
                try await call(client)
            }
        }

        struct Status: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Show the account's second factors and settings.")
            @Flag(name: .long, help: "Print the server's JSON object instead.") var json = false

            func run() async throws {
                let (client, _) = try DeviceCommand.accountClient()
                let s = try await DeviceCommand.accountCall { try await client.mfaStatus() }
                if json {
                    print(String(decoding: try PrivateFiles.encoder().encode(s), as: UTF8.self))
                    return
                }
                print("multi-factor sign-in: \(s.enabled ? "on" : "off")")
                print("authenticators: \(s.authenticators.count)")
                for a in s.authenticators {
                    print(
                        "  \(a.deviceId)  \"\(Terminal.printable(a.name))\"  paired \(PrivateFiles.date(a.pairedAt))  push \(a.pushAllowed ? "on" : "off")"
                    )
                }
                print("authenticator app: \(s.totpApp ? "yes" : "no")")
                print("recovery codes left: \(s.recoveryCodesLeft)")
                print(
                    "push suspended: \(s.pushSuspended ? "yes (after a \"this wasn't me\" report; sign in with a code to lift it)" : "no")"
                )
                print(Terminal.printable("number matching: \(s.numberMatching), \(s.numberDigits) digits"))
            }
        }

        struct PairingKey: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "pairing-key",
                abstract:
                    "Make a pairing key for a new authenticator (printed alone on the first line, then its URI and QR code).",
                discussion:
                    "Valid for 10 minutes, once. On the authenticator: countersign authenticator pair KEY (or the URI)."
            )
            @OptionGroup var reauth: ReauthOptions

            func run() async throws {
                let key = try await MFA.call(reauth, what: "making a pairing key") { try await $0.createPairingKey() }
                print(Terminal.printable(Self.grouped(key.key)))
                QRText.show(key.uri)
                // The server too: an authenticator's config directory has no signed-in server to default to.
                let server =
                    URLComponents(string: key.uri)?.queryItems?.first { $0.name == "server" }?.value
                    ?? (try? SessionFile.load())??.server ?? "URL"
                Terminal.warn(
                    """
                    valid once, until \(PrivateFiles.date(key.expiresAt)); on the authenticator: countersign authenticator pair \
                    \(Self.grouped(key.key)) --server \(Terminal.printable(server)) (or the URI above)
                    """
                )
            }

            /// ABCD-EFGH-JKMN, as the server's codes are shown.
            static func grouped(_ key: String) -> String {
                guard key.count == 12, !key.contains("-") else { return key }
                let c = Array(key)
                return [c[0..<4], c[4..<8], c[8..<12]].map { String($0) }.joined(separator: "-")
            }
        }

        struct TOTP: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "totp",
                abstract: "Add an authenticator app (TOTP): enroll, then confirm with one of its codes.",
                subcommands: [Enroll.self, Confirm.self]
            )

            struct Enroll: AsyncParsableCommand {
                static let configuration = CommandConfiguration(
                    abstract: "Start: prints the otpauth:// URI (first line) and its QR code for the app.",
                    discussion:
                        "Not active until `countersign account mfa totp confirm CODE`. Enrolling again replaces an unconfirmed secret."
                )
                @OptionGroup var reauth: ReauthOptions

                func run() async throws {
                    let e = try await MFA.call(reauth, what: "adding an authenticator app") {
                        try await $0.enrollTOTP()
                    }
                    QRText.show(e.uri)
                    Terminal.warn(
                        "scan it (or type the secret \(e.secret)), then: countersign account mfa totp confirm CODE"
                    )
                }
            }

            struct Confirm: AsyncParsableCommand {
                static let configuration = CommandConfiguration(abstract: "Finish: the app's current code turns it on.")
                @Argument(help: "The 6-digit code the app shows now.") var code: String
                @OptionGroup var reauth: ReauthOptions

                func run() async throws {
                    do {
                        _ = try await MFA.call(reauth, what: "adding an authenticator app") {
                            try await $0.confirmTOTP(code: code)
                        }
                    } catch let e as ClientError where e.code == .passcodeInvalid {
                        throw CLIError.usage(
                            "the code does not match the enrolled secret (\(e)); check the app's clock and try its next code"
                        )
                    } catch let e as ClientError where e.code == .noPendingEnrollment {
                        throw CLIError.usage(
                            "nothing to confirm (\(e)); run `countersign account mfa totp enroll` first"
                        )
                    }
                    print(
                        "authenticator app confirmed: sign-in now asks for a second factor (account login --otp CODE)"
                    )
                }
            }
        }

        struct RecoveryCodes: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "recovery-codes",
                abstract: "Make 10 new recovery codes (one a line); the old ones stop working.",
                discussion:
                    "Each works once with `account login --recovery-code CODE`. They are shown only now: store them safely."
            )
            @OptionGroup var reauth: ReauthOptions

            func run() async throws {
                let codes = try await MFA.call(reauth, what: "making recovery codes") {
                    try await $0.regenerateRecoveryCodes()
                }
                for c in codes { print(Terminal.printable(c)) }
                fflush(nil)
                Terminal.warn(
                    "store these \(codes.count) recovery codes somewhere safe: they are shown only once, each works once, and earlier codes no longer work"
                )
            }
        }

        struct Settings: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "How push approvals match numbers.")
            @Option(
                name: .long,
                help: ArgumentHelp(
                    "ENTER_MANUALLY (type the number) or SELECT_NUMBER (pick it among three).",
                    valueName: "type"
                )
            )
            var numberMatching: String?
            @Option(name: .long, help: "Digits of the number: 2 or 6.") var digits: Int?
            @OptionGroup var reauth: ReauthOptions

            func validate() throws {
                if numberMatching == nil, digits == nil {
                    throw ValidationError("give --number-matching and/or --digits")
                }
                if let n = numberMatching, !["ENTER_MANUALLY", "SELECT_NUMBER"].contains(n.uppercased()) {
                    throw ValidationError("--number-matching takes ENTER_MANUALLY or SELECT_NUMBER")
                }
                if let digits, digits != 2, digits != 6 { throw ValidationError("--digits takes 2 or 6") }
            }

            func run() async throws {
                let s = try await MFA.call(reauth, what: "changing sign-in settings") { client in
                    let now = try await client.mfaStatus()
                    return try await client.updateMFASettings(
                        MFASettings(
                            numberMatching: numberMatching?.uppercased() ?? now.numberMatching,
                            numberDigits: digits ?? now.numberDigits
                        )
                    )
                }
                print(Terminal.printable("number matching: \(s.numberMatching), \(s.numberDigits) digits"))
            }
        }

        struct Disable: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract:
                    "Turn multi-factor sign-in off: unpair every authenticator, drop the app and the recovery codes."
            )
            @OptionGroup var reauth: ReauthOptions

            func run() async throws {
                try await MFA.call(reauth, what: "turning multi-factor sign-in off") { try await $0.disableMFA() }
                print(
                    "multi-factor sign-in is off: authenticators unpaired, authenticator app and recovery codes removed; the password alone signs in"
                )
            }
        }
    }
}
