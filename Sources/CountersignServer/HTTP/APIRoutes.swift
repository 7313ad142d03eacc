import CountersignAPI
import Foundation
import Hummingbird
import NIOCore

/// What every route group shares: the method table for 405s, the bearer token, bounded JSON bodies.
enum APIRoutes {
    /// Every path and its methods, for 405 answers with `Allow` (the router itself answers 404 for a
    /// known path with an unknown method). OpenAPITests checks this table against openapi.yaml.
    static let allowedMethods: [String: [String]] = [
        "/": ["GET"], "/healthz": ["GET"], "/openapi.yaml": ["GET"], "/metrics": ["GET"],
        "/v1/captcha": ["GET"], "/v1/accounts": ["POST"], "/v1/sessions": ["POST", "DELETE"],
        "/v1/sessions/current": ["DELETE"], "/v1/sessions/current/reauth": ["POST"],
        "/v1/me": ["GET"], "/v1/me/password": ["PUT"], "/v1/me/settings": ["PUT"], "/v1/me/audit": ["GET"],
        "/v1/devices/challenges": ["POST"], "/v1/devices": ["GET", "POST"], "/v1/devices/{id}": ["PATCH", "DELETE"],
        "/v1/device-sessions/challenges": ["POST"], "/v1/device-sessions": ["POST"],
        "/v1/device-sessions/current": ["DELETE"],
        "/v1/devices/current/keys": ["POST"], "/v1/devices/current/key-proof": ["PUT"],
        "/v1/devices/current/messages": ["GET"],
        "/v1/devices/current/acks": ["POST"],
        "/v1/devices/current/push-tickets": ["POST"], "/v1/push": ["GET"], "/v1/push/vapid-key": ["GET"],
        "/v1/devices/current/push-subscription": ["PUT"], "/v1/devices/current/apns-token": ["PUT"],
        "/v1/devices/current/push-target": ["GET", "DELETE"],
        "/v1/users/{username}/devices": ["GET"], "/v1/messages": ["POST"], "/v1/messages/{id}": ["GET", "DELETE"],
        "/v1/me/mfa": ["GET", "DELETE"], "/v1/me/mfa/settings": ["PUT"], "/v1/me/mfa/pairing-keys": ["POST"],
        "/v1/me/mfa/totp": ["POST"],
        "/v1/me/mfa/totp/confirm": ["POST"], "/v1/me/mfa/recovery-codes": ["POST"],
        "/v1/mfa/transactions/{id}": ["GET"], "/v1/mfa/transactions/{id}/otp": ["POST"],
        "/v1/mfa/transactions/{id}/recovery-code": ["POST"],
        "/v1/mfa/transactions/{id}/session": ["POST"],
        "/v1/auth-codes": ["POST"], "/v1/auth-codes/current": ["GET"], "/v1/auth-codes/current/session": ["POST"],
        "/v1/authenticators": ["POST"], "/v1/authenticators/refusals": ["POST"],
        "/v1/authenticator": ["GET", "DELETE"], "/v1/authenticator/challenges": ["GET"],
        "/v1/authenticator/answers": ["POST"],
        "/v1/authenticator/push": ["PUT"], "/v1/authenticator/logs": ["POST"], "/v1/authenticator/auth-codes": ["POST"],
        "/v1/authenticator/auth-codes/approve": ["POST"], "/v1/authenticator/auth-codes/deny": ["POST"],
        "/v1/me/passkeys": ["GET", "POST"], "/v1/me/passkeys/options": ["POST"],
        "/v1/me/passkeys/{id}": ["PATCH", "DELETE"],
        "/v1/sessions/passkey/options": ["POST"], "/v1/sessions/passkey": ["POST"],
        "/v1/sessions/current/reauth/passkey/options": ["POST"], "/v1/sessions/current/reauth/passkey": ["POST"],
        "/v1/mfa/transactions/{id}/passkey/options": ["POST"], "/v1/mfa/transactions/{id}/passkey": ["POST"],
        "/v1/devices/{id}/revocation-token": ["PUT"], "/v1/devices/{id}/self-revocation": ["POST"],
        "/v1/devices/{id}/vouch": ["POST"],
        "/v1/devices/{id}/endorsement": ["POST"],
        "/v1/me/key-gate/events": ["POST"], "/v1/sessions/current/binding": ["PUT"],
        "/v1/session-resumptions/challenges": ["POST"], "/v1/session-resumptions": ["POST"],
        "/.well-known/openid-configuration": ["GET"], "/oauth2/jwks": ["GET"], "/oauth2/authorize": ["GET", "POST"],
        "/oauth2/logout": ["GET", "POST"],
        "/oauth2/token": ["POST"], "/oauth2/userinfo": ["GET", "POST"], "/oauth2/revoke": ["POST"],
        "/oauth2/introspect": ["POST"], "/v1/oidc/authorizations": ["POST"], "/v1/oidc/logouts": ["POST"],
        "/v1/me/connected-apps": ["GET"], "/v1/me/connected-apps/{clientId}": ["DELETE"],
    ]

    /// The methods of the documented path that `path` is: itself, or a template whose `{…}` segments
    /// match any one segment.
    static func allowed(for path: String) -> [String]? {
        if let exact = allowedMethods[path] { return exact }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        for (template, methods) in allowedMethods where template.contains("{") {
            let parts = template.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == segments.count else { continue }
            if zip(parts, segments).allSatisfy({ $0.hasPrefix("{") ? !$1.isEmpty : $0 == $1 }) { return methods }
        }
        return nil
    }

    static func origin(_ request: Request, _ context: AppContext) -> RequestOrigin {
        RequestOrigin(address: context.peerAddress, userAgent: request.headers[.userAgent] ?? "")
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
    static func decode<T: Decodable>(_ type: T.Type, _ request: Request, maxBody: Int) async throws -> T {
        try decode(type, try await body(request, maxBody: maxBody))
    }

    /// Reads at most `maxBody` bytes of a JSON body (checking the media type), not yet decoded.
    static func body(_ request: Request, maxBody: Int) async throws -> ByteBuffer {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: maxBody)
        } catch is NIOTooManyBytesError {
            throw Problem.tooLarge(maxBody)  // this route's limit, not a global one
        }
        if let ct = request.headers[.contentType], !ct.lowercased().hasPrefix("application/json") {
            throw Problem(
                status: .unsupportedMediaType,
                code: .unsupportedMediaType,
                title: "Unsupported media type",
                detail: "Send the body as application/json."
            )
        }
        return buffer
    }

    /// Decodes a body read by `body(_:maxBody:)`, naming the field at fault.
    static func decode<T: Decodable>(_ type: T.Type, _ buffer: ByteBuffer) throws -> T {
        do {
            return try APICoding.decoder().decode(T.self, from: Data(buffer: buffer))
        } catch let DecodingError.keyNotFound(key, _) {
            throw Problem.malformed("missing field \(key.stringValue)")
        } catch let DecodingError.typeMismatch(_, c) {
            throw Problem.malformed(
                "field \(c.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
            )
        } catch let DecodingError.valueNotFound(_, c) {
            throw Problem.malformed("field \(c.codingPath.map(\.stringValue).joined(separator: ".")) is null")
        } catch let DecodingError.dataCorrupted(c) where !c.codingPath.isEmpty {
            throw Problem.malformed(
                "field \(c.codingPath.map(\.stringValue).joined(separator: ".")): \(c.debugDescription)"
            )
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
    return Response(
        status: status,
        headers: fields,
        body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value)))
    )
}
