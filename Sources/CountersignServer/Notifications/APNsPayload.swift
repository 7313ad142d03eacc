import CountersignAPI
import Foundation

/// An APNs notification's JSON (docs/PROTOCOL.md §2.3): localization keys only (Apple reads it), the category,
/// `mutable-content` (an app's extension may fetch details over its own session), and what happened with its
/// id under `countersign`.
enum APNsPayload {
    static func encode(kind: String, id: String, device: String, timeSensitive: Bool) -> [UInt8] {
        let approval = kind == RemoteNotification.Kind.approval.rawValue
        var aps: [String: Any] = [
            "alert": [
                "title-loc-key": approval
                    ? RemoteNotification.LocalizationKey.title : RemoteNotification.LocalizationKey.messageTitle,
                "loc-key": approval
                    ? RemoteNotification.LocalizationKey.message : RemoteNotification.LocalizationKey.messageBody,
            ],
            "category": approval ? RemoteNotification.Category.approval : RemoteNotification.Category.message,
            "mutable-content": 1,
            "sound": "default",
        ]
        if approval { aps["interruption-level"] = timeSensitive ? "time-sensitive" : "active" }
        var what = ["kind": kind, "id": id]
        if approval { what["device"] = device }
        let object: [String: Any] = ["aps": aps, RemoteNotification.payloadKey: what]
        return Array(
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
                ?? Data()
        )
    }
}
