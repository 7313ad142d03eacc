import CountersignAPI
import Foundation
import Hummingbird
import Testing

@testable import CountersignServer

/// The OpenAPI document stays true to the code: every problem code the server can send is listed, and
/// every documented path answers (not 404) on a running router.
@Suite(.closesStorage) struct OpenAPITests {
    static let document = String(decoding: CountersignServer.openAPIDocument, as: UTF8.self)

    static var documentedCodes: Set<String> {
        guard let start = document.range(of: "enum: [malformed-request") else { return [] }
        let list = document[start.upperBound...].prefix { $0 != "]" }
        return Set(
            ("malformed-request" + list).split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespacesAndNewlines)
            }
        )
    }

    @Test func everyProblemCodeIsDocumented() {
        let now = Date()
        let errors: [AccountError] = [.usernameTaken]
        let signInErrors: [SignInError] = [
            .invalidCredentials(delayedUntil: nil, locked: false), .wrongPassword, .superseded,
        ]
        let captchaErrors: [CaptchaError] = [.required, .invalid("x")]
        let refusals: [SignInRefusal] = [.delayed(until: now), .locked, .busy]
        let sessionErrors: [SessionError] = [
            .noAccountSession, .noDeviceSession, .notAMessagingDevice, .reauthenticationRequired(intervalMinutes: 5),
        ]
        let common: [RequestError] = [
            .invalidField(field: "x", reason: "y"), .rateLimited(retryAfter: 1), .unauthenticated, .serverBusy,
        ]
        let codes =
            errors.map { Problem($0).code } + refusals.map { Problem($0, now: now, contact: nil).code }
            + common.map { Problem($0).code } + sessionErrors.map { Problem($0).code }
            + signInErrors.map { Problem($0, contact: nil).code }
            + captchaErrors.map { Problem($0).code } + [
                Problem.malformed("x").code, Problem.notFound.code, Problem.tooLarge(1).code,
            ]
        let documented = Self.documentedCodes
        #expect(
            documented == Set(ProblemCode.allCases.map(\.rawValue)),
            "openapi.yaml and ProblemCode list the same codes"
        )
        for code in codes { #expect(documented.contains(code.rawValue), "\(code) is missing from openapi.yaml") }
    }

    /// Every kind of audited event is in `AuditEvent.kind`'s enum, so an audit page validates.
    @Test func everyAuditKindIsDocumented() throws {
        let start = try #require(Self.document.range(of: "kind: {type: string, enum: ["))
        let list = Self.document[start.upperBound...].prefix { $0 != "]" }
        let documented = Set(list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
        let kinds = Set(AuditKind.allCases.map(\.rawValue))
        #expect(
            kinds.subtracting(documented).isEmpty,
            "missing from openapi.yaml: \(kinds.subtracting(documented).sorted())"
        )
        #expect(documented.subtracting(kinds).isEmpty, "not audited: \(documented.subtracting(kinds).sorted())")
    }

    /// The 405 table lists exactly the documented paths and methods.
    @Test func methodTableMatchesTheDocument() {
        var documented: [String: [String]] = [:]
        var current: String?
        for line in Self.document.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  /") && line.hasSuffix(":") {
                current = String(line.dropFirst(2).dropLast())
                continue
            }
            if !line.hasPrefix("    ") && !line.hasPrefix("  /") { if !line.hasPrefix(" ") { current = nil } }
            if let c = current,
                let m = ["get", "post", "put", "patch", "delete"].first(where: { line == "    \($0):" })
            {
                documented[c, default: []].append(m.uppercased())
            }
        }
        #expect(documented.mapValues { $0.sorted() } == APIRoutes.allowedMethods.mapValues { $0.sorted() })
    }

    @Test func unknownMethodsOnKnownPathsAre405() async throws {
        let h = try await Harness.make(.sqlite)
        try await h.run { api in
            let r = try await api.call(.patch, "/v1/me")
            #expect(r.status == 405 && r.code == "method-not-allowed" && r.headers[.allow] == "GET" && r.isProblem)
            let s = try await api.call(.get, "/v1/sessions")
            #expect(s.status == 405 && s.headers[.allow] == "POST, DELETE")
            let templated = try await api.call(.put, "/v1/devices/2b9d0c8e-7a31-4f0e-9c55-3d2f1a6b8e40")
            #expect(templated.status == 405 && templated.headers[.allow] == "PATCH, DELETE", "a path template matches")
            #expect(try await api.call(.get, "/v1/devices/a/b").status == 404)
            #expect(try await api.call(.get, "/v1/nothing").status == 404)
        }
    }

    /// Each documented method on each documented path reaches a handler: neither 404 nor the 405 that
    /// the method table would give an unrouted one. No method on any of them is a 500.
    @Test func everyDocumentedPathIsRouted() async throws {
        let paths = Self.document.split(separator: "\n").filter { $0.hasPrefix("  /") && $0.hasSuffix(":") }
            .map { String($0.dropFirst(2).dropLast()) }
        #expect(paths.count == APIRoutes.allowedMethods.count, "\(paths)")
        // With a public URL: the OpenID Connect provider's paths answer 404 on a server without one.
        let h = try await Harness.make(.sqlite) {
            $0.metricsToken = "metrics-token-0123456789"
            $0.publicURL = "https://cs.example.com"
        }
        try await h.run { api in
            for path in paths {
                for method in [HTTPRequest.Method.get, .post, .put, .patch, .delete] {
                    let r = try await api.call(
                        method,
                        path,
                        token: path == "/metrics" ? "metrics-token-0123456789" : nil
                    )
                    #expect(r.status != 500, "\(method) \(path)")
                    if APIRoutes.allowedMethods[path]?.contains(method.rawValue) == true {
                        #expect(r.status != 404 && r.status != 405, "\(method) \(path) is documented but not routed")
                    }
                }
            }
        }
    }
}
