import CountersignAPI
import Foundation
import Hummingbird

/// Passkeys under /v1 (docs/openapi.yaml, docs/PROTOCOL.md §5): the account's own (account session), a
/// discoverable sign-in (anonymous), a sign-in's second factor (the transaction's binding secret) and a
/// session's re-authentication. Each ceremony is two calls: options, then the browser's answer.
struct PasskeyRoutes {
    let sessions: SessionService
    let mfa: MFAService
    let passkeys: PasskeyService
    let maxBody: Int

    /// A WebAuthn response carries a credential ID (≤ 1023 bytes), a signature and authenticator data of
    /// a few hundred bytes, and an attestation object with a public key: 64 KiB is ample.
    static let maxResponseBody = 64 * 1024

    func register(on router: Router<AppContext>) {
        let v1 = router.group("v1")
        let maxBody = min(self.maxBody, Self.maxResponseBody)
        let withAccount = v1.group().add(middleware: AccountSessionMiddleware(sessions: sessions))
        @Sendable func binding(_ r: Request) -> String? { APIRoutes.bearerToken(r.headers[.authorization]) }
        @Sendable func session(_ s: NewSession) throws -> Response {
            try json(
                SignedInSession(token: s.token, expiresAt: s.expiresAt, account: AccountRoutes.account(s.account)),
                status: .created
            )
        }

        // The account's passkeys.
        withAccount.get("me/passkeys") { request, context in
            try json(PasskeyList(passkeys: try await passkeys.list(try context.account())))
        }
        withAccount.post("me/passkeys/options") { request, context in
            try json(try await passkeys.startRegistration(try context.account()), status: .created)
        }
        withAccount.post("me/passkeys") { request, context in
            let auth = try context.account()
            let body = try await APIRoutes.decode(PasskeyRegistrationFinish.self, request, maxBody: maxBody)
            return try json(
                try await passkeys.finishRegistration(auth, body, origin: APIRoutes.origin(request, context)),
                status: .created
            )
        }
        withAccount.patch("me/passkeys/:id") { request, context in
            let auth = try context.account()
            let body = try await APIRoutes.decode(PasskeyRename.self, request, maxBody: maxBody)
            return try json(
                try await passkeys.rename(
                    auth,
                    id: try context.parameters.require("id"),
                    name: body.name,
                    origin: APIRoutes.origin(request, context)
                )
            )
        }
        withAccount.delete("me/passkeys/:id") { request, context in
            try await passkeys.remove(
                try context.account(),
                id: try context.parameters.require("id"),
                origin: APIRoutes.origin(request, context)
            )
            return Response(status: .noContent)
        }

        // A discoverable sign-in: the passkey names the account.
        v1.post("sessions/passkey/options") { request, context in
            try json(try await passkeys.startSignIn(origin: APIRoutes.origin(request, context)), status: .created)
        }
        v1.post("sessions/passkey") { request, context in
            let body = try await APIRoutes.decode(PasskeyAssertionFinish.self, request, maxBody: maxBody)
            return try session(try await passkeys.finishSignIn(body, origin: APIRoutes.origin(request, context)))
        }

        // Re-authentication by passkey in place of the password.
        withAccount.post("sessions/current/reauth/passkey/options") { request, context in
            try json(try await passkeys.startReauthentication(try context.account()), status: .created)
        }
        withAccount.post("sessions/current/reauth/passkey") { request, context in
            let auth = try context.account()
            let body = try await APIRoutes.decode(PasskeyAssertionFinish.self, request, maxBody: maxBody)
            try await passkeys.finishReauthentication(auth, body, origin: APIRoutes.origin(request, context))
            return Response(status: .noContent)
        }

        // A sign-in's second factor. The transaction is checked before the body is read.
        v1.post("mfa/transactions/:id/passkey/options") { request, context in
            let id = try context.parameters.require("id")
            let accountID = try await mfa.openTransactionAccount(id: id, binding: binding(request))
            return try json(
                try await passkeys.startSecondFactor(transactionID: id, accountID: accountID),
                status: .created
            )
        }
        v1.post("mfa/transactions/:id/passkey") { request, context in
            let id = try context.parameters.require("id")
            let accountID = try await mfa.openTransactionAccount(id: id, binding: binding(request))
            let body = try await APIRoutes.decode(PasskeyAssertionFinish.self, request, maxBody: maxBody)
            let attempt = try await passkeys.attempt(body, kind: .secondFactor, accountID: accountID, boundTo: id)
            let origin = APIRoutes.origin(request, context)
            return try json(
                try await mfa.submitFactor(id: id, binding: binding(request), method: .passkey, origin: origin) { _ in
                    let result = try await passkeys.check(attempt)
                    guard case .failure(let why) = result else { return true }
                    // The wrong answer itself is audited as the transaction's (`wrong-passkey`).
                    try await passkeys.auditIfCounter(why, accountID: accountID, kind: .mfa, origin: origin)
                    return false
                }
            )
        }
    }
}
