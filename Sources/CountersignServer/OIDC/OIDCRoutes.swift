import CountersignAPI
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The OpenID Connect provider's endpoints (docs/PROTOCOL.md §6, docs/openapi.yaml): discovery and keys,
/// the token, userinfo, revocation and introspection endpoints in the specs' own forms (form bodies, OAuth
/// error objects), and the web client's `POST /v1/oidc/authorizations`, which answers the authorization
/// request the page at `/oauth2/authorize` was opened with.
struct OIDCRoutes {
    let oidc: OIDCService
    let sessions: SessionService
    let backChannel: BackChannelLogout
    let background: BackgroundWork
    let maxBody: Int

    func register(on router: Router<AppContext>) {
        router.get(".well-known/openid-configuration") { _, _ in
            try Self.answerNow { try json(try oidc.discovery(), headers: [.cacheControl: "public, max-age=300"]) }
        }
        router.get("oauth2/jwks") { _, _ in
            try await Self.answer {
                try json(["keys": try await oidc.keys.jwks()], headers: [.cacheControl: "public, max-age=300"])
            }
        }
        // OpenID Connect Core §3.1.2.1 and RP-Initiated Logout §2: both endpoints take POST too. The pages read
        // their request from the URL, so a form POST is sent to the same page as a query (303: GET).
        for path in ["oauth2/authorize", "oauth2/logout"] {
            router.post(RouterPath(path)) { request, _ in
                try await Self.answer {
                    Response(
                        status: .seeOther,
                        headers: [
                            .location: "/\(path)?" + (try await Self.formQuery(request)), .cacheControl: "no-store",
                        ]
                    )
                }
            }
        }
        router.post("oauth2/token") { request, context in
            try await Self.answer {
                let credentials = try await Self.credentials(request, maxBody: maxBody)
                return try json(try await oidc.token(credentials, origin: APIRoutes.origin(request, context)))
            }
        }
        for method in [HTTPRequest.Method.get, .post] {
            router.on("oauth2/userinfo", method: method) { request, _ in
                do {
                    var token = APIRoutes.bearerToken(request.headers[.authorization])
                    if token == nil, method == .post {
                        token = try await Self.form(request, maxBody: maxBody)["access_token"]
                    }
                    return try json(try await oidc.userinfo(accessToken: token))
                } catch let error as OIDCError {
                    // RFC 6750 §3: the error in WWW-Authenticate, never a body a client could mistake for claims.
                    var response = try Self.errorResponse(error)
                    response.status = .unauthorized
                    response.headers[.wwwAuthenticate] =
                        "Bearer error=\"\(error.code.rawValue)\", error_description=\"\(error.description)\""
                    return response
                }
            }
        }
        router.post("oauth2/revoke") { request, context in
            try await Self.answer {
                try await oidc.revoke(
                    try await Self.credentials(request, maxBody: maxBody),
                    origin: APIRoutes.origin(request, context)
                )
                return Response(status: .ok, headers: [.cacheControl: "no-store"])
            }
        }
        router.post("oauth2/introspect") { request, _ in
            try await Self.answer {
                try json(try await oidc.introspect(try await Self.credentials(request, maxBody: maxBody)))
            }
        }
        router.group("v1").post("oidc/authorizations") { request, context in
            let body = try await APIRoutes.decode(OIDCAuthorizationRequest.self, request, maxBody: maxBody)
            try Self.checkBounds(body.parameters)
            // Signed in or not: the request decides what an absent session means (login, or login_required).
            let auth = try? await sessions.authenticate(token: APIRoutes.bearerToken(request.headers[.authorization]))
            let bearer = APIRoutes.bearerToken(request.headers[.authorization])
            let answer = try await oidc.authorize(
                body.parameters.map { ($0[0], $0[1]) },
                auth: auth,
                consent: body.consent,
                signedInSince: body.signedInSince,
                origin: APIRoutes.origin(request, context),
                stillSignedIn: { (try? await sessions.authenticate(token: bearer)) != nil }
            )
            return try json(Self.answer(answer))
        }
        let withAccount = router.group("v1").add(middleware: AccountSessionMiddleware(sessions: sessions))
        withAccount.get("me/connected-apps") { _, context in
            try json(ConnectedAppList(apps: try await oidc.connectedApps(accountID: try context.account().account.id)))
        }
        withAccount.delete("me/connected-apps/:clientId") { request, context in
            guard
                let grants = try await oidc.disconnect(
                    try context.account(),
                    clientID: try context.parameters.require("clientId"),
                    origin: APIRoutes.origin(request, context)
                )
            else {
                throw Problem(
                    status: .notFound,
                    code: .notFound,
                    title: "Not a connected app",
                    detail: "This account has not allowed that application; see GET /v1/me/connected-apps."
                )
            }
            // The application's sessions end too: it hears of it by back-channel logout, never waited for.
            if !grants.isEmpty { background.run(cancellable: true) { [backChannel] in await backChannel.send(grants) } }
            return Response(status: .noContent)
        }
        router.group("v1").post("oidc/logouts") { request, context in
            let body = try await APIRoutes.decode(OIDCLogoutRequest.self, request, maxBody: maxBody)
            try Self.checkBounds(body.parameters)
            let bearer = APIRoutes.bearerToken(request.headers[.authorization])
            let auth = try? await sessions.authenticate(token: bearer)
            // A sign-out asked with a session that ended is refused (401: the page renews it and asks again),
            // never answered as done with nothing revoked.
            if body.signOut == true, bearer != nil, auth == nil { throw RequestError.unauthenticated }
            let outcome = try await oidc.logout(
                body.parameters.map { ($0[0], $0[1]) },
                auth: auth,
                signOut: body.signOut == true,
                origin: APIRoutes.origin(request, context)
            )
            // The applications signed in through this browser session hear of it; the sign-out never waits.
            if case .signedOut(_, _, let grants) = outcome, !grants.isEmpty {
                background.run(cancellable: true) { [backChannel] in await backChannel.send(grants) }
            }
            return try json(Self.answer(outcome))
        }
    }

    /// The document's bounds on a page's `[name, value]` pairs (what the provider then accepts is narrower, and
    /// said on the page).
    static func checkBounds(_ parameters: [[String]]) throws {
        guard parameters.count <= 100,
            parameters.allSatisfy({ $0.count == 2 && $0.allSatisfy { $0.unicodeScalars.count <= 4_096 } })
        else {
            throw Problem.malformed("parameters: at most 100 [name, value] pairs of at most 4,096 characters each")
        }
    }

    static func answer(_ outcome: OIDCService.Logout) -> OIDCLogoutAnswer {
        switch outcome {
        case .shown(let error):
            OIDCLogoutAnswer(action: .error, error: error.code.rawValue, errorDescription: error.description)
        case .confirm(let client, let location, let otherAccount):
            OIDCLogoutAnswer(action: .confirm, location: location, clientName: client?.name, otherAccount: otherAccount)
        case .signedOut(let client, let location, _):
            OIDCLogoutAnswer(action: .signedOut, location: location, clientName: client?.name)
        }
    }

    static func answer(_ outcome: OIDCService.Authorization) -> OIDCAuthorizationAnswer {
        switch outcome {
        case .redirect(let location): OIDCAuthorizationAnswer(action: .redirect, location: location)
        case .shown(let error):
            OIDCAuthorizationAnswer(action: .error, error: error.code.rawValue, errorDescription: error.description)
        case .signIn(let reason, let client, let since):
            OIDCAuthorizationAnswer(
                action: .signIn,
                reason: reason.rawValue,
                need: client.policy.rawValue,
                since: since,
                clientId: client.id,
                clientName: client.name
            )
        case .consent(let client, let scope, let pairing):
            OIDCAuthorizationAnswer(
                action: .consent,
                clientId: client.id,
                clientName: client.name,
                scope: scope,
                pairingFingerprint: pairing
            )
        }
    }

    /// Runs `body`, answering an `OIDCError` as the specs do: 400 (401 for `invalid_client`) with an OAuth
    /// error object, never cached.
    static func answer(_ body: () async throws -> Response) async throws -> Response {
        do { return try await body() } catch let error as OIDCError { return try errorResponse(error) }
    }

    static func answerNow(_ body: () throws -> Response) throws -> Response {
        do { return try body() } catch let error as OIDCError { return try errorResponse(error) }
    }

    static func errorResponse(_ error: OIDCError) throws -> Response {
        var response = try json(
            OIDCErrorResponse(error: error.code.rawValue, error_description: error.description),
            status: error.code == .invalidClient ? .unauthorized : error.code == .serverError ? .notFound : .badRequest
        )
        if error.code == .invalidClient { response.headers[.wwwAuthenticate] = "Basic realm=\"countersign\"" }
        response.headers[HTTPField.Name("Pragma")!] = "no-cache"
        return response
    }

    /// The client's credentials: HTTP Basic (RFC 6749 §2.3.1: each part form-encoded) and the form body.
    static func credentials(_ request: Request, maxBody: Int) async throws -> OIDCService.ClientCredentials {
        let form = try await form(request, maxBody: maxBody)
        var basic: (String, String)?
        if let header = request.headers[.authorization] {
            let parts = header.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "basic",
                let decoded = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces)),
                let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":"),
                let id = formDecoded(String(text[..<colon])),
                let secret = formDecoded(String(text[text.index(after: colon)...]))
            else { throw OIDCError(.invalidClient, "the Authorization header is not HTTP Basic with client_id:secret") }
            basic = (id, secret)
        }
        return OIDCService.ClientCredentials(basic: basic, form: form)
    }

    /// An application/x-www-form-urlencoded body (a parameter given twice is refused, RFC 6749 §3.2).
    static func form(_ request: Request, maxBody: Int) async throws -> [String: String] {
        guard let type = request.headers[.contentType]?.lowercased(),
            type.hasPrefix("application/x-www-form-urlencoded")
        else { throw OIDCError(.invalidRequest, "send the parameters as application/x-www-form-urlencoded") }
        let buffer: ByteBuffer
        do { buffer = try await request.body.collect(upTo: maxBody) } catch is NIOTooManyBytesError {
            throw OIDCError(.invalidRequest, "the body is larger than \(maxBody) bytes")
        }
        var form: [String: String] = [:]
        for pair in String(buffer: buffer).split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = formDecoded(String(parts[0])),
                let value = formDecoded(parts.count > 1 ? String(parts[1]) : "")
            else { throw OIDCError(.invalidRequest, "the body is not valid form encoding") }
            guard form[name] == nil else {
                throw OIDCError(.invalidRequest, "the parameter \(name) is given more than once")
            }
            form[name] = value
        }
        return form
    }

    /// A form body as the query it already is (the same encoding), checked: within 8 KiB, form-encoded
    /// characters only, each pair decodable. Order and repeats are kept, for the page's own checks.
    static func formQuery(_ request: Request) async throws -> String {
        guard let type = request.headers[.contentType]?.lowercased(),
            type.hasPrefix("application/x-www-form-urlencoded")
        else { throw OIDCError(.invalidRequest, "send the parameters as application/x-www-form-urlencoded") }
        let buffer: ByteBuffer
        // The body becomes a URL: within what proxies take in a request line.
        do { buffer = try await request.body.collect(upTo: 8_192) } catch is NIOTooManyBytesError {
            throw OIDCError(.invalidRequest, "the body is larger than 8,192 bytes")
        }
        let text = String(buffer: buffer)
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~%+=&*")
        guard text.allSatisfy(allowed.contains),
            text.split(separator: "&").allSatisfy({ pair in
                pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    .allSatisfy { formDecoded(String($0)) != nil }
            })
        else { throw OIDCError(.invalidRequest, "the body is not valid form encoding") }
        return text
    }

    static func formDecoded(_ text: String) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
