/// What an APNs notification of Countersign's says (docs/PROTOCOL.md §2.3): Apple can read it, so it holds
/// localization keys and an id, nothing else. The keys and identifiers are PingOne's where it has them; an app
/// localizes them (its `Localizable.strings`) and registers the categories (`UNNotificationCategory`) with
/// these identifiers. Declared once for the server, which sends them, and the SDK, which reads them.
public enum RemoteNotification {
    /// The member of the payload beside `aps` that says what happened: `{"kind", "id", "device"?}`.
    public static let payloadKey = "countersign"

    /// PingOne's localization keys and their English words.
    public enum LocalizationKey {
        /// "New Authentication"
        public static let title = "notification.title"
        /// "You have a new authentication request."
        public static let message = "notification.message"
        /// "Approve"
        public static let confirm = "notification.confirm"
        /// "Deny"
        public static let deny = "notification.deny"
        /// "Encrypted Message Received" (PingIdentity's words)
        public static let messageTitle = "message.title"
        /// "Tap to decrypt and view the message"
        public static let messageBody = "message.body"

        /// The words an app shows for each key, in English.
        public static let english: [String: String] = [
            title: "New Authentication", message: "You have a new authentication request.", confirm: "Approve",
            deny: "Deny", messageTitle: "Encrypted Message Received",
            messageBody: "Tap to decrypt and view the message",
        ]
    }

    /// Notification categories (`aps.category`).
    public enum Category {
        /// A sign-in request: "Approve" opens the app (its number must be chosen there), "Deny" answers in the
        /// background. PingOne's name for this category (SDK 1.8.1).
        public static let approval = "APPROVE_AND_OPEN_APP"
        /// A message: a tap opens the app at it.
        public static let message = "MESSAGE"
    }

    /// Action identifiers of the approval category.
    public enum Action {
        public static let approve = "APPROVE"
        public static let deny = "DENY"
    }

    /// What happened, in `payloadKey`'s `kind`.
    public enum Kind: String, Sendable {
        case message
        case approval
    }
}
