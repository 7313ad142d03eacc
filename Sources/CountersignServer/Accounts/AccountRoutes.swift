import CountersignAPI
import CountersignCrypto
import Foundation
import Hummingbird

/// Accounts, sessions and the audit log under /v1 (docs/openapi.yaml). Handlers decode, call
/// `AccountService` (or, to sign in and re-authenticate, `SignInFlow` once), encode; the rules live in
/// the services.
struct AccountRoutes {
    let service: AccountService
    let sessions: SessionService
    let signIn: SignInFlow
    let maxBody: Int

    static func account(_ a: AccountRecord) -> Account {
        Account(
            id: a.id,
            username: a.username,
            name: a.name,
            lastname: a.lastname,
            settings: AccountSettings(reauthIntervalMinutes: a.reauthMinutes),
            createdAt: a.createdAt
        )
    }

    func register(on router: Router<AppContext>) {
        let v1 = router.group("v1")
        let withAccount = v1.group().add(middleware: AccountSessionMiddleware(sessions: sessions))
        v1.get("captcha") { _, _ in try json(service.captchaChallenge(), headers: [.cacheControl: "no-store"]) }
        v1.post("accounts") { request, context in
            let body = try await decode(RegisterRequest.self, request, context)
            let account = try await service.register(
                username: body.username,
                password: body.password,
                name: body.name,
                lastname: body.lastname,
                captcha: body.captcha,
                origin: origin(request, context)
            )
            if body.signIn == true {
                let s = try await signIn.signIn.startAfterRegistration(account, origin: origin(request, context))
                return try json(
                    SignedInSession(token: s.token, expiresAt: s.expiresAt, account: Self.account(s.account)),
                    status: .created,
                    headers: [.location: "/v1/me"]
                )
            }
            return try json(Self.account(account), status: .created, headers: [.location: "/v1/me"])
        }
        v1.post("sessions") { request, context in
            let body = try await decode(SignInRequest.self, request, context)
            switch try await signIn.signIn(
                username: body.username,
                password: body.password,
                captcha: body.captcha,
                secondFactor: body.secondFactor,
                origin: origin(request, context)
            ) {
            case .secondFactor(let pending):
                return try json(pending, status: .accepted)
            case .signedIn(let s):
                return try json(
                    SignedInSession(token: s.token, expiresAt: s.expiresAt, account: Self.account(s.account)),
                    status: .created
                )
            }
        }
        withAccount.delete("sessions/current") { request, context in
            let auth = try context.account()
            try await service.signOut(auth, origin: origin(request, context))
            return Response(status: .noContent)
        }
        withAccount.post("sessions/current/reauth") { request, context in
            let auth = try context.account()
            let body = try await decode(ReauthRequest.self, request, context)
            switch try await signIn.reauthenticate(
                auth,
                password: body.password,
                captcha: body.captcha,
                secondFactor: body.secondFactor,
                origin: origin(request, context)
            ) {
            case .secondFactor(let pending): return try json(pending, status: .accepted)
            case .reauthenticated: return Response(status: .noContent)
            }
        }
        withAccount.get("me") { _, context in
            try json(Self.account(try context.account().account))
        }
        withAccount.put("me/password") { request, context in
            let auth = try context.account()
            let body = try await decode(PasswordChangeRequest.self, request, context)
            try await service.changePassword(
                auth,
                current: body.currentPassword,
                new: body.newPassword,
                origin: origin(request, context)
            )
            return Response(status: .noContent)
        }
        withAccount.put("me/settings") { request, context in
            let auth = try context.account()
            let body = try await decode(AccountSettings.self, request, context)
            try await service.updateSettings(
                auth,
                reauthMinutes: body.reauthIntervalMinutes,
                origin: origin(request, context)
            )
            return try json(AccountSettings(reauthIntervalMinutes: body.reauthIntervalMinutes))
        }
        withAccount.get("me/audit") { request, context in
            let auth = try context.account()
            let q = request.uri.queryParameters
            var limit = 50
            if let l = q["limit"] {
                guard let n = Int(String(l)), (1...100).contains(n) else {
                    throw Problem.malformed("limit must be 1 to 100")
                }
                limit = n
            }
            var before: Int64?
            if let b = q["before"] {
                guard let n = Int64(String(b)), n > 0 else {
                    throw Problem.malformed("before must be an event id from a previous page's next")
                }
                before = n
            }
            let events = try await service.auditEvents(auth, before: before, limit: limit)
            let next = events.count == limit ? events.last.map { "/v1/me/audit?limit=\(limit)&before=\($0.id)" } : nil
            return try json(AuditPage(events: events, next: next))
        }
    }

    func decode<T: Decodable>(_ type: T.Type, _ request: Request, _ context: AppContext) async throws -> T {
        try await APIRoutes.decode(type, request, maxBody: maxBody)
    }

    func origin(_ request: Request, _ context: AppContext) -> RequestOrigin { APIRoutes.origin(request, context) }
}
