import CountersignAPI
import Hummingbird

/// A device's push target (docs/PROTOCOL.md §2.2), set, read and removed with its device session.
struct NotificationRoutes {
    let sessions: SessionService
    let notifications: NotificationService
    let maxBody: Int

    func register(on router: Router<AppContext>) {
        let withDevice = router.group("v1").add(middleware: DeviceSessionMiddleware(sessions: sessions))
        withDevice.put("devices/current/push-subscription") { request, context in
            let body = try await APIRoutes.decode(WebPushSubscription.self, request, maxBody: maxBody)
            return try json(try await notifications.subscribe(try context.device(), body))
        }
        withDevice.put("devices/current/apns-token") { request, context in
            let body = try await APIRoutes.decode(APNsDeviceToken.self, request, maxBody: maxBody)
            return try json(try await notifications.register(try context.device(), body))
        }
        withDevice.get("devices/current/push-target") { _, context in
            try json(try await notifications.target(try context.device()))
        }
        withDevice.delete("devices/current/push-target") { _, context in
            try await notifications.remove(try context.device())
            return Response(status: .noContent)
        }
    }
}
