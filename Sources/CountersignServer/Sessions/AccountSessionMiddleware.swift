import Hummingbird

/// Routes that need an account session: the bearer token is checked once, before the handler runs
/// (401 `unauthenticated` when it is missing, unknown or expired), and the session is on the context.
struct AccountSessionMiddleware: RouterMiddleware {
    let sessions: SessionService

    func handle(
        _ request: Request,
        context: AppContext,
        next: (Request, AppContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.accountSession = try await sessions.authenticate(
            token: APIRoutes.bearerToken(request.headers[.authorization])
        )
        return try await next(request, context)
    }
}
