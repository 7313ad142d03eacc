import CountersignAPI
import CountersignCrypto
import Foundation
import Hummingbird

/// Accounts, sessions and the audit log under /v1 (docs/openapi.yaml). Handlers decode, call
/// `AccountService`, encode; the rules live in the service. After a verified password, sign-in and
/// re-authentication ask the MFA feature whether a second factor follows.
struct AccountRoutes {
    let service: AccountService
    let mfa: MFAService
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
            return try json(Self.account(account), status: .created, headers: [.location: "/v1/me"])
        }
        v1.post("sessions") { request, context in
            let body = try await decode(SignInRequest.self, request, context)
            do {
                let offerPush = try Self.offerPush(body.secondFactor)
                let verified = try await service.verifySignIn(
                    username: body.username,
                    password: body.password,
                    captcha: body.captcha,
                    origin: origin(request, context)
                )
                if let pending = try await mfa.secondFactor(after: verified, offerPush: offerPush) {
                    try await service.pending(verified)
                    ServerMetrics.signIn("second-factor")
                    return try json(pending, status: .accepted)
                }
                let s = try await service.completeSignIn(verified)
                ServerMetrics.signIn("success")
                return try json(
                    SignedInSession(token: s.token, expiresAt: s.expiresAt, account: Self.account(s.account)),
                    status: .created
                )
            } catch let e as AccountError {
                ServerMetrics.signIn(Self.metricOutcome(e))
                throw e
            } catch let e as RequestError {
                ServerMetrics.signIn(Self.metricOutcome(e))
                throw e
            }
        }
        v1.delete("sessions/current") { request, context in
            let auth = try await authenticate(request)
            try await service.signOut(auth, origin: origin(request, context))
            return Response(status: .noContent)
        }
        v1.post("sessions/current/reauth") { request, context in
            let auth = try await authenticate(request)
            let body = try await decode(ReauthRequest.self, request, context)
            let offerPush = try Self.offerPush(body.secondFactor)
            let verified = try await service.verifyReauthentication(
                auth,
                password: body.password,
                captcha: body.captcha,
                origin: origin(request, context)
            )
            if let pending = try await mfa.secondFactor(after: verified, offerPush: offerPush) {
                try await service.pending(verified)
                return try json(pending, status: .accepted)
            }
            try await service.completeReauthentication(verified)
            return Response(status: .noContent)
        }
        v1.get("me") { request, _ in
            try json(Self.account(try await authenticate(request).account))
        }
        v1.put("me/password") { request, context in
            let auth = try await authenticate(request)
            let body = try await decode(PasswordChangeRequest.self, request, context)
            try await service.changePassword(
                auth,
                current: body.currentPassword,
                new: body.newPassword,
                origin: origin(request, context)
            )
            return Response(status: .noContent)
        }
        v1.put("me/settings") { request, context in
            let auth = try await authenticate(request)
            let body = try await decode(AccountSettings.self, request, context)
            try await service.updateSettings(
                auth,
                reauthMinutes: body.reauthIntervalMinutes,
                origin: origin(request, context)
            )
            return try json(AccountSettings(reauthIntervalMinutes: body.reauthIntervalMinutes))
        }
        v1.get("me/audit") { request, _ in
            let auth = try await authenticate(request)
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

    static func metricOutcome(_ e: AccountError) -> String {
        switch e {
        case .invalidCredentials: return "invalid-credentials"
        case .signInDelayed: return "delayed"
        case .accountLocked: return "locked"
        case .signInBusy: return "busy"
        case .captchaRequired, .captchaInvalid: return "captcha"
        default: return "other"
        }
    }

    static func metricOutcome(_ e: RequestError) -> String {
        switch e {
        case .rateLimited: return "rate-limited"
        case .serverBusy: return "server-busy"
        default: return "other"
        }
    }

    func authenticate(_ request: Request) async throws -> Authenticated {
        try await service.authenticate(token: APIRoutes.bearerToken(request.headers[.authorization]))
    }

    func decode<T: Decodable>(_ type: T.Type, _ request: Request, _ context: AppContext) async throws -> T {
        try await APIRoutes.decode(type, request, maxBody: maxBody)
    }

    func origin(_ request: Request, _ context: AppContext) -> RequestOrigin { APIRoutes.origin(request, context) }
}
