import CountersignAPI
import Foundation
import Hummingbird
import Synchronization

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
            let auth = try context.device()
            let q = request.uri.queryParameters
            var askedAfter: Int64 = 0
            var askedLimit = 100
            if let a = q["after"] {
                guard let n = Int64(String(a)), n >= 0 else {
                    throw Problem.malformed("after must be a queue position (0 or a previous page's next)")
                }
                askedAfter = n
            }
            if let l = q["limit"] {
                guard let n = Int(String(l)), (1...100).contains(n) else {
                    throw Problem.malformed("limit must be 1 to 100")
                }
                askedLimit = n
            }
            let wait = try WaitParameter.seconds(request)
            // Long poll: with nothing due, answer as soon as something is, or after `wait` seconds. The
            // session is read again after each wait: one that ended meanwhile (signed out everywhere,
            // revoked, rotated away) wakes the poll and gets 401, not what arrived after it ended.
            let first = auth
            let after = askedAfter
            let limit = askedLimit
            let reads = Mutex(0)
            return try json(
                try await LongPoll(
                    hub: push.hub,
                    keys: [
                        auth.account.id, PushHub.deviceKey(auth.device.id), PushHub.sessionKey(auth.session.tokenHash),
                    ],
                    read: {
                        let again = reads.withLock { n in
                            defer { n += 1 }
                            return n > 0
                        }
                        let current =
                            again ? try await sessions.authenticate(deviceSessionHash: first.session.tokenHash) : first
                        return try await messages.fetch(current, after: after, limit: limit)
                    }
                ).run(wait: wait) { page in !page.messages.isEmpty }
            )
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
