import HTTPTypes
import Hummingbird

/// Headers for every answer that is not a web client file (those carry `WebClient.securityHeaders`):
/// API JSON, problems, the OpenAPI document and metrics are never to be sniffed into HTML, framed, or
/// run as a page.
struct SecurityHeadersMiddleware: RouterMiddleware {
    typealias Context = AppContext

    static let headers: HTTPFields = [
        .contentSecurityPolicy: "default-src 'none'; frame-ancestors 'none'",
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
    ]

    func handle(
        _ request: Request,
        context: AppContext,
        next: (Request, AppContext) async throws -> Response
    ) async throws -> Response {
        var response = try await next(request, context)
        for field in Self.headers where response.headers[field.name] == nil { response.headers.append(field) }
        return response
    }
}
