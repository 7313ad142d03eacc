import CountersignAPI
import Foundation

/// What a notification of Countersign's says (docs/PROTOCOL.md §2.3), read from an APNs `userInfo` (or any
/// dictionary with the same members): which event, and its id. Nothing else in it is trusted; the event is
/// fetched and verified over the device's own session.
public enum RemoteNotificationContent: Sendable, Equatable {
    case message(id: String)
    case approval(transactionID: String, deviceID: String)

    /// Nil when `userInfo` is not a notification of Countersign's.
    public init?(userInfo: [AnyHashable: Any]) {
        guard let what = userInfo[RemoteNotification.payloadKey] as? [String: Any],
            let kind = (what["kind"] as? String).flatMap(RemoteNotification.Kind.init(rawValue:)),
            let id = what["id"] as? String, Self.plausible(id)
        else { return nil }
        switch kind {
        case .message: self = .message(id: id)
        case .approval:
            guard let device = what["device"] as? String, Self.plausible(device) else { return nil }
            self = .approval(transactionID: id, deviceID: device)
        }
    }

    private static func plausible(_ id: String) -> Bool {
        (1...128).contains(id.utf8.count)
            && id.utf8.allSatisfy {
                $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0)
                    || (0x61...0x7A).contains($0)
            }
    }
}

/// A notification category an app registers (`UNNotificationCategory`), as data: UserNotifications is not on
/// every platform the SDK runs on. What PingOne's `getUNNotificationCategories()` builds from.
public struct NotificationCategory: Sendable, Equatable {
    public struct Action: Sendable, Equatable {
        public let identifier: String
        /// The action's title, a localization key (`RemoteNotification.LocalizationKey`).
        public let titleLocalizationKey: String
        /// Whether the app opens (`.foreground`): to choose the number before approving.
        public let opensApp: Bool
        public let destructive: Bool
    }
    public let identifier: String
    public let actions: [Action]

    /// The sign-in request's category (Approve opens the app: the number is chosen there) and the message's.
    public static let all: [NotificationCategory] = [
        NotificationCategory(
            identifier: RemoteNotification.Category.approval,
            actions: [
                Action(
                    identifier: RemoteNotification.Action.approve,
                    titleLocalizationKey: RemoteNotification.LocalizationKey.confirm,
                    opensApp: true,
                    destructive: false
                ),
                Action(
                    identifier: RemoteNotification.Action.deny,
                    titleLocalizationKey: RemoteNotification.LocalizationKey.deny,
                    opensApp: false,
                    destructive: true
                ),
            ]
        ),
        NotificationCategory(identifier: RemoteNotification.Category.message, actions: []),
    ]
}

extension CountersignAuthenticator {
    /// PingOne's `setDeviceToken(_:type:)`: this authenticator's APNs token, where its sign-in requests are
    /// pushed while the app is not running.
    @discardableResult
    public func setDeviceToken(_ token: Data, type: APNSDeviceTokenType) async throws -> PushTargetInfo {
        try await client.setDeviceToken(token, type: type)
    }

    /// PingOne's `processRemoteNotification(_:)`: the sign-in request a push names, fetched over this
    /// authenticator's device session and verified under the challenge key pinned at pairing, with its number
    /// options. Throws `PingOneError.unrecognizedRemoteNotification` (10002) for a push that is not a sign-in
    /// request of Countersign's for this authenticator, and `.pushConfirmationTimeout` (10009) when the request
    /// was answered or expired meanwhile.
    public func processRemoteNotification(_ userInfo: [AnyHashable: Any]) async throws -> NotificationObject {
        guard case .approval(let transactionID, let deviceID) = RemoteNotificationContent(userInfo: userInfo),
            deviceID == state.deviceId
        else { throw PingOneError.unrecognizedRemoteNotification }
        guard let pending = try await pendingNotifications().first(where: { $0.transactionID == transactionID }) else {
            throw PingOneError.pushConfirmationTimeout
        }
        return pending
    }
}

extension CountersignClient {
    /// A message push, for a messaging device: the message it names, fetched from the device's queue over its
    /// session; nil when it is no longer queued (received and acknowledged already). Throws
    /// `PingOneError.unrecognizedRemoteNotification` (10002) for a push that is not a message of Countersign's.
    public func processRemoteNotification(_ userInfo: [AnyHashable: Any]) async throws -> QueuedMessage? {
        guard case .message(let id) = RemoteNotificationContent(userInfo: userInfo) else {
            throw PingOneError.unrecognizedRemoteNotification
        }
        var after: Int64 = 0
        for _ in 0..<100 {
            let page = try await fetchMessages(after: after)
            if let found = page.messages.first(where: { $0.id == id }) { return found }
            guard let next = page.next else { return nil }
            after = next
        }
        return nil
    }
}
