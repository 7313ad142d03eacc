import CountersignAPI
import Hummingbird

/// The push channel's HTTP side (docs/PROTOCOL.md §2): tickets, and an answer for a plain GET of the
/// WebSocket path. The WebSocket itself is served by `PushChildChannel`.
struct PushRoutes {
    let sessions: SessionService
    let push: PushService
    let vapid: VAPIDKey

    func register(on router: Router<AppContext>) {
        let v1 = router.group("v1")
        // Public: what a browser subscribes with (PushManager.subscribe's applicationServerKey).
        v1.get("push/vapid-key") { _, _ in
            try json(
                VAPIDPublicKey(publicKey: Base64URL(vapid.publicKey)),
                headers: [.cacheControl: "public, max-age=300"]
            )
        }
        let withDevice = v1.group().add(middleware: DeviceSessionMiddleware(sessions: sessions))
        withDevice.post("devices/current/push-tickets") { _, context in
            try json(try await push.ticket(try context.device()), status: .created)
        }
        v1.get("push") { _, _ -> Response in
            throw Problem(
                status: .upgradeRequired,
                code: .malformedRequest,
                title: "WebSocket required",
                detail:
                    "GET /v1/push is a WebSocket (Upgrade: websocket); authenticate with a ticket in the first frame (docs/PROTOCOL.md §2).",
                headers: [.upgrade: "websocket"]
            )
        }
    }
}
