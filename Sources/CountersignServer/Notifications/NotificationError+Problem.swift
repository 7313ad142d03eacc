import CountersignAPI
import Hummingbird

/// How the notifications' refusals read as problems.
extension Problem {
    init(_ error: NotificationError) {
        switch error {
        case .invalidSubscription(let field, let reason):
            self.init(RequestError.invalidField(field: field, reason: reason))
        case .endpointNotPublic(let host):
            self.init(
                status: .unprocessableContent,
                code: .pushEndpointRefused,
                title: "Push endpoint refused",
                detail:
                    "\(host) is not a public push service (not every address of it is public, or it has none): this server sends pushes only to those. An administrator can allow a self-hosted one by name (push-allowed-hosts, docs/SERVER.md).",
                extra: ["field": .string("endpoint")]
            )
        case .apnsOff:
            self.init(
                status: .conflict,
                code: .apnsNotConfigured,
                title: "APNs not configured",
                detail:
                    "This server has no APNs key (apns-key-file, docs/SERVER.md), so it cannot notify an iOS app; ask its administrator."
            )
        case .none:
            self = .notFound
        }
    }
}
