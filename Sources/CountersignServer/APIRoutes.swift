import CountersignCrypto
import CountersignAPI
import Foundation
import Hummingbird

/// The JSON API under /v1 (docs/openapi.yaml). Handlers decode, call `AccountService`, encode; the
/// rules live in the service.
struct APIRoutes {
    let service: AccountService
    let maxBody: Int

    static func account(_ a: AccountRecord) -> Account {
        Account(id: a.id, username: a.username, name: a.name, lastname: a.lastname,
                settings: AccountSettings(reauthIntervalMinutes: a.reauthMinutes), createdAt: a.createdAt)
    }

    func register(on router: Router<AppContext>) {
        let v1 = router.group("v1")
        v1.get("captcha") { _, _ in try json(service.captchaChallenge(), headers: [.cacheControl: "no-store"]) }
        v1.post("accounts") { request, context in
            let body = try await decode(RegisterRequest.self, request, context)
            let account = try await service.register(username: body.username, password: body.password, name: body.name,
                                                     lastname: body.lastname, captcha: body.captcha, origin: origin(request, context))
            return try json(Self.account(account), status: .created, headers: [.location: "/v1/me"])
        }
        v1.post("sessions") { request, context in
            let body = try await decode(SignInRequest.self, request, context)
            do {
                let s = try await service.signIn(username: body.username, password: body.password, captcha: body.captcha,
                                                 origin: origin(request, context))
                ServerMetrics.signIn("success")
                return try json(SignedInSession(token: s.token, expiresAt: s.expiresAt, account: Self.account(s.account)), status: .created)
            } catch let e as AccountError {
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
            try await service.reauthenticate(auth, password: body.password, origin: origin(request, context))
            return Response(status: .noContent)
        }
        v1.get("me") { request, _ in
            try json(Self.account(try await authenticate(request).account))
        }
        v1.put("me/password") { request, context in
            let auth = try await authenticate(request)
            let body = try await decode(PasswordChangeRequest.self, request, context)
            try await service.changePassword(auth, current: body.currentPassword, new: body.newPassword, origin: origin(request, context))
            return Response(status: .noContent)
        }
        v1.put("me/settings") { request, context in
            let auth = try await authenticate(request)
            let body = try await decode(AccountSettings.self, request, context)
            try await service.updateSettings(auth, reauthMinutes: body.reauthIntervalMinutes, origin: origin(request, context))
            return try json(AccountSettings(reauthIntervalMinutes: body.reauthIntervalMinutes))
        }
        v1.get("me/audit") { request, _ in
            let auth = try await authenticate(request)
            let q = request.uri.queryParameters
            var limit = 50
            if let l = q["limit"] {
                guard let n = Int(String(l)), (1...100).contains(n) else { throw Problem.malformed("limit must be 1 to 100") }
                limit = n
            }
            var before: Int64?
            if let b = q["before"] {
                guard let n = Int64(String(b)), n > 0 else { throw Problem.malformed("before must be an event id from a previous page's next") }
                before = n
            }
            let events = try await service.auditEvents(auth, before: before, limit: limit)
            let next = events.count == limit ? events.last.map { "/v1/me/audit?limit=\(limit)&before=\($0.id)" } : nil
            return try json(AuditPage(events: events, next: next))
        }
    }

    /// Every path and its methods, for 405 answers with `Allow` (the router itself answers 404 for a
    /// known path with an unknown method). OpenAPITests checks this table against openapi.yaml.
    static let allowedMethods: [String: [String]] = [
        "/healthz": ["GET"], "/openapi.yaml": ["GET"], "/metrics": ["GET"],
        "/v1/captcha": ["GET"], "/v1/accounts": ["POST"], "/v1/sessions": ["POST"],
        "/v1/sessions/current": ["DELETE"], "/v1/sessions/current/reauth": ["POST"],
        "/v1/me": ["GET"], "/v1/me/password": ["PUT"], "/v1/me/settings": ["PUT"], "/v1/me/audit": ["GET"],
    ]

    static func metricOutcome(_ e: AccountError) -> String {
        switch e {
        case .invalidCredentials: return "invalid-credentials"
        case .signInDelayed: return "delayed"
        case .accountLocked: return "locked"
        case .signInBusy: return "busy"
        case .rateLimited: return "rate-limited"
        case .captchaRequired, .captchaInvalid: return "captcha"
        case .serverBusy: return "server-busy"
        default: return "other"
        }
    }

    func origin(_ request: Request, _ context: AppContext) -> RequestOrigin {
        RequestOrigin(address: context.peerAddress, userAgent: request.headers[.userAgent] ?? "")
    }

    func authenticate(_ request: Request) async throws -> Authenticated {
        return try await service.authenticate(token: Self.bearerToken(request.headers[.authorization]))
    }

    /// The credentials of `Authorization: Bearer TOKEN`. The scheme is case-insensitive (RFC 9110 §11.1)
    /// and may be followed by more than one space; the token itself is compared exactly.
    static func bearerToken(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].drop { $0 == " " }
        return token.isEmpty ? nil : String(token)
    }

    /// Reads at most `maxBody` bytes and decodes JSON, naming the field at fault.
    func decode<T: Decodable>(_ type: T.Type, _ request: Request, _ context: AppContext) async throws -> T {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: maxBody)
        } catch {
            throw Problem.tooLarge(maxBody)
        }
        if let ct = request.headers[.contentType], !ct.lowercased().hasPrefix("application/json") {
            throw Problem(status: .unsupportedMediaType, code: .unsupportedMediaType, title: "Unsupported media type",
                          detail: "Send the body as application/json.")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer: buffer))
        } catch let DecodingError.keyNotFound(key, _) {
            throw Problem.malformed("missing field \(key.stringValue)")
        } catch let DecodingError.typeMismatch(_, c) {
            throw Problem.malformed("field \(c.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type")
        } catch let DecodingError.valueNotFound(_, c) {
            throw Problem.malformed("field \(c.codingPath.map(\.stringValue).joined(separator: ".")) is null")
        } catch {
            throw Problem.malformed("the body is not a JSON object of the documented shape")
        }
    }
}

func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
    let encoder = APICoding.encoder()
    var fields = headers
    fields[.contentType] = "application/json"
    // Every API answer is about one account, and the sign-in answer carries its token: no cache, shared
    // or private, may keep any of them (RFC 9111 §5.2.2.5).
    if fields[.cacheControl] == nil { fields[.cacheControl] = "no-store" }
    return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
}
