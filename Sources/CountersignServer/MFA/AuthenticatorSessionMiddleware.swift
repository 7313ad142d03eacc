import Hummingbird

/// Routes for a paired authenticator: its device session is checked once, before the handler runs (401
/// `unauthenticated`), and a messaging device's session is refused (403 `not-an-authenticator`) before any
/// body is read.
struct AuthenticatorSessionMiddleware: RouterMiddleware {
    let sessions: SessionService

    func handle(
        _ request: Request,
        context: AppContext,
        next: (Request, AppContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        let auth = try await sessions.authenticate(deviceToken: APIRoutes.bearerToken(request.headers[.authorization]))
        guard auth.device.kind == DeviceRecord.authenticator else { throw MFAError.notAnAuthenticator }
        context.deviceSession = auth
        return try await next(request, context)
    }
}
