import CountersignAPI
import Foundation
import Hummingbird

/// Sending, fetching, acknowledging and cancelling messages under /v1 (docs/openapi.yaml). Every route
/// needs a device session: an account password alone never reads or sends mail.
struct MessageRoutes {
    let sessions: SessionService
    let messages: MessageService
    let push: PushService
    /// An envelope of the largest size in unpadded base64url, and room for the rest of the JSON.
    static let maxBody = 1_500_000

    func register(on router: Router<AppContext>) {
        let v1 = router.group("v1")
        // A messaging device's session: an authenticator's is refused (403) by the middleware.
        let withMessagingDevice = v1.group().add(
            middleware: DeviceSessionMiddleware(sessions: sessions, messagingOnly: true)
        )
        withMessagingDevice.post("messages") { request, context in
            // The session first (the middleware), from the headers: an anonymous or stale caller is
            // answered 401 before a byte of its (up to 1.5 MB) body is read. Then the JSON and the checks,
            // the ECDSA signature last, off the event loops.
            let auth = try context.device()
            try messages.admitSend(auth)
            let body = try await APIRoutes.body(request, maxBody: Self.maxBody)
            let checked = try await SerialQueuePool.cpu.run {
                try messages.check(auth, try APIRoutes.decode(SendMessageRequest.self, body))
            }
            let (sent, created) = try await messages.store(checked)
            return try json(sent, status: created ? .created : .ok, headers: [.location: "/v1/messages/\(sent.id)"])
        }
        withMessagingDevice.get("devices/current/messages") { request, context in
            var auth = try context.device()
            let q = request.uri.queryParameters
            var after: Int64 = 0
            var limit = 100
            if let a = q["after"] {
                guard let n = Int64(String(a)), n >= 0 else {
                    throw Problem.malformed("after must be a queue position (0 or a previous page's next)")
                }
                after = n
            }
            if let l = q["limit"] {
                guard let n = Int(String(l)), (1...100).contains(n) else {
                    throw Problem.malformed("limit must be 1 to 100")
                }
                limit = n
            }
            let wait = try WaitParameter.seconds(request)
            // Long poll: with nothing due, answer as soon as something is, or after `wait` seconds. The
            // session is read again after each wait: one that ended meanwhile (signed out everywhere,
            // revoked, rotated away) wakes the poll and gets 401, not what arrived after it ended.
            let deadline = ContinuousClock.now + .seconds(wait)
            var first = true
            while true {
                let waiter = push.hub.register(
                    auth.account.id,
                    PushHub.deviceKey(auth.device.id),
                    PushHub.sessionKey(auth.session.tokenHash)
                )
                do {
                    if !first { auth = try await sessions.authenticate(deviceSessionHash: auth.session.tokenHash) }
                    first = false
                    let page = try await messages.fetch(auth, after: after, limit: limit)
                    let left = deadline - ContinuousClock.now
                    guard page.messages.isEmpty, left > .zero, !push.hub.isClosed else {
                        push.hub.cancel(waiter)
                        return try json(page)
                    }
                    await push.hub.wait(
                        waiter,
                        seconds: Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
                    )
                } catch {
                    push.hub.cancel(waiter)
                    throw error
                }
            }
        }
        withMessagingDevice.post("devices/current/acks") { request, context in
            let auth = try context.device()
            let body = try await APIRoutes.decode(AckRequest.self, request, maxBody: 64 * 1024)
            return try json(AckResult(acknowledged: try await messages.acknowledge(auth, seqs: body.seqs)))
        }
        withMessagingDevice.get("messages/:id") { _, context in
            let auth = try context.device()
            return try json(try await messages.status(auth, messageID: try context.parameters.require("id")))
        }
        withMessagingDevice.delete("messages/:id") { _, context in
            let auth = try context.device()
            try await messages.cancel(auth, messageID: try context.parameters.require("id"))
            return Response(status: .noContent)
        }
    }
}
