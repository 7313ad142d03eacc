import Foundation

/// The storage the notifications need. Each backend's storage implements it; a device's revocation deletes
/// its target in the same transaction (`DeviceStore.revoke`).
public protocol NotificationStore: Sendable {
    /// Stores the device's target, replacing the one it had; false when the device is not active.
    func savePushTarget(_ target: PushTarget) async throws -> Bool
    func pushTarget(deviceID: String) async throws -> PushTarget?
    /// False when the device had none.
    func deletePushTarget(deviceID: String) async throws -> Bool
    /// Deletes every device's target at `address`: its push service said it is gone (404, 410). A browser's
    /// one subscription serves each of its devices; one registered since has another address and stays.
    func deletePushTargets(address: String) async throws
    /// Deletes the device's target only while it is still `address` (APNs's refusal of a token is about the
    /// device that registered it: another device that claims the same token keeps its own).
    func deletePushTarget(deviceID: String, address: String) async throws

    /// The targets of the active devices these messages are queued for, with the message each is for, but the
    /// senders' (their copies of what they sent are not news) and those of devices seen live after `now`.
    func pushTargets(messageIDs: [String], now: Date) async throws -> [(target: PushTarget, messageID: String)]
    /// The targets of these devices, the active ones not seen live after `now`.
    func pushTargets(deviceIDs: [String], now: Date) async throws -> [PushTarget]
    /// Marks these devices' targets as seen live until `until`, by `node`; nil clears the marks `node` made (not
    /// another node's: the device may have connected there since). A device without a target is not changed.
    func setLive(deviceIDs: [String], until: Date?, by node: String) async throws
    /// Clears every mark `node` made.
    func clearLive(by node: String) async throws
}
