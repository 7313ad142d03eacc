import Hummingbird

/// Routes that need a device session (`csd_…`), or with `orAccount` either kind of session (the key
/// directory): the bearer token is checked once, before the handler runs (401 `unauthenticated`), and the
/// session is on the context. With `messagingOnly`, an authenticator's session is refused (403
/// `not-a-messaging-device`): it holds no mail and must not send, read receipts, cancel the account's
/// delayed messages or hold message keys.
struct DeviceSessionMiddleware: RouterMiddleware {
    let sessions: SessionService
    var orAccount = false
    var messagingOnly = false

    init(sessions: SessionService, orAccount: Bool = false, messagingOnly: Bool = false) {
        // An account session has no device kind to check.
        precondition(!orAccount || !messagingOnly, "messagingOnly is for device sessions alone")
        self.sessions = sessions
        self.orAccount = orAccount
        self.messagingOnly = messagingOnly
    }

    func handle(
        _ request: Request,
        context: AppContext,
        next: (Request, AppContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        let token = APIRoutes.bearerToken(request.headers[.authorization])
        if orAccount, token?.hasPrefix("csd_") != true {
            context.accountSession = try await sessions.authenticate(token: token)
        } else {
            let auth = try await sessions.authenticate(deviceToken: token)
            if messagingOnly, auth.device.kind != DeviceRecord.messaging { throw SessionError.notAMessagingDevice }
            context.deviceSession = auth
        }
        return try await next(request, context)
    }
}
