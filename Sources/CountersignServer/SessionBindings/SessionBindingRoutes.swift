import CountersignAPI
import Foundation
import Hummingbird

/// Staying signed in in a browser (docs/PROTOCOL.md §1.1, docs/openapi.yaml): bind a key to the current
/// session, and resume a session with it.
struct SessionBindingRoutes {
    let bindings: SessionBindingService
    let sessions: SessionService
    let maxBody: Int

    func register(on router: Router<AppContext>) {
        let v1 = router.group("v1")
        let withAccount = v1.group().add(middleware: AccountSessionMiddleware(sessions: sessions))
        withAccount.put("sessions/current/binding") { request, context in
            let body = try await APIRoutes.decode(SessionBindingRequest.self, request, maxBody: maxBody)
            let (binding, idle, next) = try await bindings.bind(
                try context.account(),
                body,
                origin: APIRoutes.origin(request, context)
            )
            return try json(
                SessionBinding(id: binding.id, deviceId: binding.deviceID, idleSeconds: Int(idle), nextNonce: next),
                headers: [.cacheControl: "no-store"]
            )
        }
        v1.post("session-resumptions/challenges") { request, context in
            let body = try await APIRoutes.decode(SessionResumptionChallengeRequest.self, request, maxBody: maxBody)
            return try json(
                try await bindings.resumptionChallenge(
                    bindingID: body.bindingId,
                    origin: APIRoutes.origin(request, context)
                ),
                status: .created,
                headers: [.cacheControl: "no-store"]
            )
        }
        v1.post("session-resumptions") { request, context in
            let body = try await APIRoutes.decode(SessionResumptionRequest.self, request, maxBody: maxBody)
            let (s, authenticatedAt, next) = try await bindings.resume(body, origin: APIRoutes.origin(request, context))
            return try json(
                SignedInSession(
                    token: s.token,
                    expiresAt: s.expiresAt,
                    account: AccountRoutes.account(s.account),
                    authenticatedAt: authenticatedAt,
                    nextNonce: next
                ),
                status: .created,
                headers: [.cacheControl: "no-store"]
            )
        }
    }
}
