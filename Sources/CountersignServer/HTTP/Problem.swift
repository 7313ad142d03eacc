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

    /// A device's keys (registering, pairing an authenticator, its answers): shared by the devices and MFA
    /// features, which both make devices.
    static func badSignature(_ why: String) -> Problem {
        Problem(status: .unprocessableContent, code: .badSignature, title: "Bad signature", detail: why)
    }

    static func deviceLimit(_ n: Int) -> Problem {
        Problem(
            status: .conflict,
            code: .deviceLimit,
            title: "Too many devices",
            detail: "The account already has \(n) active devices; revoke one (DELETE /v1/devices/{id}) first.",
            extra: ["limit": .int(n)]
        )
    }

    static func keyInUse(_ why: String) -> Problem {
        Problem(status: .conflict, code: .keyInUse, title: "Key in use", detail: why)
    }

    /// A sign-in whose password changed after it began (or whose session was not collected in time):
    /// shared by the sign-in and MFA features, which both finish sign-ins.
    static let signInSuperseded = Problem(
        status: .conflict,
        code: .mfaSignInSuperseded,
        title: "Sign-in superseded",
        detail:
            "The password changed after this sign-in began, or its session was not collected within two minutes; sign in again."
    )

    static func tooLarge(_ limit: Int) -> Problem {
        Problem(
            status: .contentTooLarge,
            code: .payloadTooLarge,
            title: "Request body too large",
            detail: "The body exceeds \(limit) bytes."
        )
    }

    /// Errors every feature shares (the request's own shape, limits, a busy server). Each feature maps its
    /// own errors in its folder (`AccountError+Problem.swift` and so on).
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
