import CountersignAPI
import CountersignCrypto
import Foundation

/// Which APNs environment issued a device token (PingOne's `APNSDeviceTokenType`): a development build's
/// tokens are the sandbox's, an App Store or TestFlight build's production's.
public enum APNSDeviceTokenType: String, Sendable, CaseIterable {
    case production
    case sandbox
}

/// The device's push target (docs/PROTOCOL.md §2.2): how the server tells it of messages and sign-in requests
/// while nothing of it is connected. Each call takes the device session.
extension CountersignClient {
    /// Registers an iOS app's APNs device token for this device (PingOne's `setDeviceToken(_:type:)`), replacing
    /// any target it had. The server refuses it (`apns-not-configured`) when it has no APNs key.
    @discardableResult
    public func setDeviceToken(_ token: Data, type: APNSDeviceTokenType) async throws -> PushTargetInfo {
        try await send(
            "PUT",
            "/v1/devices/current/apns-token",
            body: APNsDeviceToken(token: Hex.encode(token), environment: type.rawValue),
            as: PushTargetInfo.self,
            credential: .device
        )
    }

    /// Registers a Web Push subscription (a UnifiedPush distributor's, or a browser's) for this device.
    @discardableResult
    public func setWebPushSubscription(_ subscription: WebPushSubscription) async throws -> PushTargetInfo {
        try await send(
            "PUT",
            "/v1/devices/current/push-subscription",
            body: subscription,
            as: PushTargetInfo.self,
            credential: .device
        )
    }

    /// The device's push target, or nil when it has none.
    public func pushTarget() async throws -> PushTargetInfo? {
        do {
            return try await send(
                "GET",
                "/v1/devices/current/push-target",
                as: PushTargetInfo.self,
                credential: .device
            )
        } catch let e as ClientError where e.code == .notFound {
            return nil
        }
    }

    /// Stops the server telling this device anything while it is not connected.
    public func removePushTarget() async throws {
        try await send("DELETE", "/v1/devices/current/push-target", credential: .device)
    }
}
