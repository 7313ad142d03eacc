import Foundation

/// Where a device is told of events while nothing of it is connected (docs/PROTOCOL.md §2.2): one per
/// device, a Web Push subscription (a browser) or an APNs device token (an app built on the SDK).
public struct PushTarget: Sendable, Equatable {
    public enum Channel: String, Sendable, CaseIterable {
        case webPush = "webpush"
        case apns
    }

    public var deviceID: String
    public var accountID: String
    public var channel: Channel
    /// Web Push: the endpoint URL. APNs: the device token, lower-case hex.
    public var address: String
    /// Web Push: the subscription's P-256 key (65 bytes) and auth secret (16); empty for APNs.
    public var p256dh: [UInt8]
    public var auth: [UInt8]
    /// APNs: `production` or `sandbox`, which endpoint its token belongs to.
    public var environment: String?
    public var createdAt: Date
}
