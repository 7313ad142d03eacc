import CountersignAPI
import Foundation
import Hummingbird

/// Multi-factor sign-in under /v1 (docs/openapi.yaml, docs/PROTOCOL.md §3): the account's settings (account
/// session), the signing-in client's transaction and auth-code routes (its binding secret as bearer),
/// and the authenticator's routes (device session).
struct MFARoutes {
    let sessions: SessionService
    let mfa: MFAService
    let push: PushService
    let maxBody: Int
    let publicURL: String?

    /// The base URL an authenticator should use, for the URIs and QR codes the client hands it: the
    /// configured public URL, else the Host the client used (host and port characters only).
    func server(_ request: Request) -> String { Self.server(authority: request.head.authority, publicURL: publicURL) }

    static func server(authority: String?, publicURL: String?) -> String {
        if let publicURL { return publicURL }
        let authority = authority ?? ""
        let plain =
            !authority.isEmpty && authority.utf8.count <= 255
            && authority.unicodeScalars.allSatisfy {
                $0.isASCII
                    && ($0.properties.isAlphabetic || $0.properties.numericType != nil
                        || ".-:[]".unicodeScalars.contains($0))
            }
        return "http://" + (plain ? authority : "localhost")
    }

    func register(on router: Router<AppContext>) {
        let v1 = router.group("v1")
        let withAccount = v1.group().add(middleware: AccountSessionMiddleware(sessions: sessions))
        let withAuthenticator = v1.group().add(middleware: AuthenticatorSessionMiddleware(sessions: sessions))
        @Sendable func binding(_ r: Request) -> String? { APIRoutes.bearerToken(r.headers[.authorization]) }

        // The account's own settings.
        withAccount.get("me/mfa") { request, context in try json(try await mfa.status(try context.account())) }
        withAccount.put("me/mfa/settings") { request, context in
            let auth = try context.account()
            return try json(
                try await mfa.updateSettings(
                    auth,
                    try await APIRoutes.decode(MFASettings.self, request, maxBody: maxBody)
                )
            )
        }
        withAccount.delete("me/mfa") { request, context in
            try await mfa.disable(try context.account(), origin: APIRoutes.origin(request, context))
            return Response(status: .noContent)
        }
        withAccount.post("me/mfa/pairing-keys") { request, context in
            try json(try await mfa.pairingKey(try context.account(), server: server(request)), status: .created)
        }
        withAccount.post("me/mfa/totp") { request, context in
            try json(try await mfa.enrollTOTP(try context.account()), status: .created)
        }
        withAccount.post("me/mfa/totp/confirm") { request, context in
            let auth = try context.account()
            return try json(
                try await mfa.confirmTOTP(
                    auth,
                    code: try await APIRoutes.decode(MFACodeRequest.self, request, maxBody: maxBody).code
                )
            )
        }
        withAccount.post("me/mfa/recovery-codes") { request, context in
            try json(try await mfa.regenerateRecoveryCodes(try context.account()), status: .created)
        }

        // The signing-in client, with its binding secret.
        v1.get("mfa/transactions/:id") { request, context in
            let id = try context.parameters.require("id")
            let wait = try WaitParameter.seconds(request)
            let terminal: Set<String> = ["COMPLETED", "FAILED", "PUSH_CONFIRMATION_TIMED_OUT"]
            let read = { @Sendable in try await mfa.transaction(id: id, binding: binding(request)) }
            let first = try await read()
            let current = try await LongPoll(
                hub: push.hub,
                keys: [PushHub.transactionKey(id)],
                maxWaiters: LongPoll<MFATransactionView>.maxWaitersPerKey,
                expiry: .init(at: \.expiresAt, now: { mfa.clock.now() }),
                read: read
            ).run(first: first, wait: wait) { now in
                now.status != first.status || now.attemptsLeft != first.attemptsLeft || terminal.contains(now.status)
            }
            return try json(current)
        }
        v1.post("mfa/transactions/:id/otp") { request, context in
            // The transaction is checked before the body is read.
            _ = try await mfa.transaction(id: try context.parameters.require("id"), binding: binding(request))
            let body = try await APIRoutes.decode(MFACodeRequest.self, request, maxBody: maxBody)
            return try json(
                try await mfa.submitCode(
                    id: try context.parameters.require("id"),
                    binding: binding(request),
                    code: body.code,
                    kind: .totp,
                    origin: APIRoutes.origin(request, context)
                )
            )
        }
        v1.post("mfa/transactions/:id/recovery-code") { request, context in
            // The transaction is checked before the body is read.
            _ = try await mfa.transaction(id: try context.parameters.require("id"), binding: binding(request))
            let body = try await APIRoutes.decode(MFACodeRequest.self, request, maxBody: maxBody)
            return try json(
                try await mfa.submitCode(
                    id: try context.parameters.require("id"),
                    binding: binding(request),
                    code: body.code,
                    kind: .recovery,
                    origin: APIRoutes.origin(request, context)
                )
            )
        }
        v1.post("mfa/transactions/:id/session") { request, context in
            switch try await mfa.collect(
                id: try context.parameters.require("id"),
                binding: binding(request),
                origin: APIRoutes.origin(request, context)
            ) {
            case .session(let s):
                return try json(
                    SignedInSession(token: s.token, expiresAt: s.expiresAt, account: AccountRoutes.account(s.account)),
                    status: .created
                )
            case .reauthenticated:
                return Response(status: .noContent)
            }
        }

        // Authentication codes: the screen that waits.
        v1.post("auth-codes") { request, context in
            let body = try await APIRoutes.decode(AuthCodeRequest.self, request, maxBody: maxBody)
            return try json(
                try await mfa.createAuthCode(body, origin: APIRoutes.origin(request, context), server: server(request)),
                status: .created
            )
        }
        v1.get("auth-codes/current") { request, _ in
            let wait = try WaitParameter.seconds(request)
            let (hash, first) = try await mfa.authCodeStatus(binding: binding(request))
            let final: Set<String> = ["COMPLETED", "DENIED", "EXPIRED"]
            return try json(
                try await LongPoll(
                    hub: push.hub,
                    keys: [PushHub.authCodeKey(hash)],
                    maxWaiters: LongPoll<AuthCodeState>.maxWaitersPerKey,
                    expiry: .init(at: \.expiresAt, now: { mfa.clock.now() }),
                    read: { try await mfa.authCodeStatus(binding: binding(request)).state }
                ).run(first: first, wait: wait) { now in now.status != first.status || final.contains(now.status) }
            )
        }
        v1.post("auth-codes/current/session") { request, context in
            let s = try await mfa.collectAuthCode(binding: binding(request), origin: APIRoutes.origin(request, context))
            return try json(
                SignedInSession(token: s.token, expiresAt: s.expiresAt, account: AccountRoutes.account(s.account)),
                status: .created
            )
        }

        // Authenticators.
        v1.post("authenticators") { request, context in
            let body = try await APIRoutes.decode(PairingRequest.self, request, maxBody: maxBody)
            return try json(try await mfa.pair(body, origin: APIRoutes.origin(request, context)), status: .created)
        }
        v1.post("authenticators/refusals") { request, context in
            let body = try await APIRoutes.decode(PairingRefusal.self, request, maxBody: maxBody)
            try await mfa.refusePairing(body, origin: APIRoutes.origin(request, context))
            return Response(status: .noContent)
        }
        withAuthenticator.get("authenticator/challenges") { request, context in
            try json(try await mfa.challenges(try context.device()))
        }
        withAuthenticator.post("authenticator/answers") { request, context in
            let auth = try context.device()
            let body = try await APIRoutes.decode(PushAnswer.self, request, maxBody: maxBody)
            return try json(try await mfa.answer(auth, body, origin: APIRoutes.origin(request, context)))
        }
        withAuthenticator.get("authenticator") { request, context in
            try json(try await mfa.authenticatorInfo(try context.device()))
        }
        withAuthenticator.delete("authenticator") { request, context in
            try await mfa.unpair(try context.device(), origin: APIRoutes.origin(request, context))
            return Response(status: .noContent)
        }
        withAuthenticator.put("authenticator/push") { request, context in
            let auth = try context.device()
            return try json(
                try await mfa.setPush(
                    auth,
                    allowed: try await APIRoutes.decode(PushPermission.self, request, maxBody: maxBody).allowed
                )
            )
        }
        withAuthenticator.post("authenticator/logs") { request, context in
            let auth = try context.device()
            return try json(
                try await mfa.uploadLogs(
                    auth,
                    text: try await APIRoutes.decode(LogUpload.self, request, maxBody: 300 * 1024).text
                ),
                status: .created
            )
        }
        for action in [MFAService.AuthCodeAction.claim, .approve, .deny] {
            withAuthenticator.post(
                action == .claim ? "authenticator/auth-codes" : "authenticator/auth-codes/\(action.rawValue)"
            ) { request, context in
                let auth = try context.device()
                return try json(
                    try await mfa.authCode(
                        auth,
                        try await APIRoutes.decode(AuthCodeClaim.self, request, maxBody: maxBody),
                        action: action
                    )
                )
            }
        }
    }
}
