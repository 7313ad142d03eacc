import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import Logging

/// Telling devices of events while nothing of them is connected (docs/PROTOCOL.md §2.2): each device's push
/// target (a Web Push subscription, an APNs token), and a notification per event per device, sent by the node
/// that committed the event (so once, however many nodes there are). A push says only what happened and its
/// id: `{"kind":"message","id":…}` or `{"kind":"approval","id":TRANSACTION,"device":…}`, sealed to the browser
/// and padded to one size; the device fetches the rest over its own session.
public final class NotificationService: Sendable {
    let store: any NotificationStore
    let policy: PushEndpointPolicy
    let webPush: WebPushSender
    let metrics: NotificationMetrics
    let background: BackgroundWork
    let clock: any WallClock
    let logger: Logger
    /// Whether APNs is configured (a `.p8` key): without it a device token is refused.
    let apnsConfigured: Bool
    /// How long a message push is kept by its push service for an offline browser.
    static let messageTTL = 24 * 3600

    init(
        store: any NotificationStore,
        policy: PushEndpointPolicy,
        webPush: WebPushSender,
        metrics: NotificationMetrics,
        background: BackgroundWork,
        clock: any WallClock,
        logger: Logger,
        apnsConfigured: Bool = false
    ) {
        self.store = store
        self.policy = policy
        self.webPush = webPush
        self.metrics = metrics
        self.background = background
        self.clock = clock
        self.logger = logger
        self.apnsConfigured = apnsConfigured
    }

    // MARK: Targets

    /// Stores the browser's subscription as the device's target, once checked: an https endpoint (or http to
    /// a host allowed by name) of at most 1 KiB whose host resolves only to public addresses, a P-256 key on the
    /// curve, a 16-byte secret.
    public func subscribe(
        _ auth: DeviceAuthenticated,
        _ subscription: WebPushSubscription
    ) async throws
        -> PushTargetInfo
    {
        let url = try policy.check(endpoint: subscription.endpoint)
        let p256dh = try Self.bytes(subscription.keys.p256dh, field: "keys.p256dh")
        do { _ = try WebPushMessage.subscriptionKey(p256dh) } catch {
            throw NotificationError.invalidSubscription(
                field: "keys.p256dh",
                reason: "an uncompressed P-256 public key on the curve (65 bytes, 0x04 first), base64url"
            )
        }
        let secret = try Self.bytes(subscription.keys.auth, field: "keys.auth")
        guard secret.count == 16 else {
            throw NotificationError.invalidSubscription(field: "keys.auth", reason: "16 bytes, base64url")
        }
        if let host = url.host, !policy.allows(host: host) {
            let addresses = await webPush.resolver(host)
            if let why = policy.refusal(addresses: addresses, host: host) {
                throw NotificationError.endpointNotPublic(why)
            }
        }
        let target = PushTarget(
            deviceID: auth.device.id,
            accountID: auth.account.id,
            channel: .webPush,
            address: subscription.endpoint,
            p256dh: p256dh,
            auth: secret,
            environment: nil,
            createdAt: clock.now()
        )
        guard try await store.savePushTarget(target) else { throw NotificationError.none }
        return Self.info(target)
    }

    /// Stores an iOS app's device token as the device's target.
    public func register(_ auth: DeviceAuthenticated, _ token: APNsDeviceToken) async throws -> PushTargetInfo {
        guard apnsConfigured else { throw NotificationError.apnsOff }
        let hex = token.token.lowercased()
        guard (16...200).contains(hex.utf8.count), hex.utf8.count % 2 == 0, Hex.decode(hex) != nil else {
            throw NotificationError.invalidSubscription(field: "token", reason: "the device token's bytes in hex")
        }
        guard ["production", "sandbox"].contains(token.environment) else {
            throw NotificationError.invalidSubscription(field: "environment", reason: "production or sandbox")
        }
        let target = PushTarget(
            deviceID: auth.device.id,
            accountID: auth.account.id,
            channel: .apns,
            address: hex,
            p256dh: [],
            auth: [],
            environment: token.environment,
            createdAt: clock.now()
        )
        guard try await store.savePushTarget(target) else { throw NotificationError.none }
        return Self.info(target)
    }

    public func target(_ auth: DeviceAuthenticated) async throws -> PushTargetInfo {
        guard let t = try await store.pushTarget(deviceID: auth.device.id) else { throw NotificationError.none }
        return Self.info(t)
    }

    /// Turning notifications off: idempotent.
    public func remove(_ auth: DeviceAuthenticated) async throws {
        _ = try await store.deletePushTarget(deviceID: auth.device.id)
    }

    static func info(_ t: PushTarget) -> PushTargetInfo {
        PushTargetInfo(
            channel: t.channel.rawValue,
            origin: t.channel == .webPush ? URL(string: t.address).flatMap(WebPushSender.origin) : nil,
            environment: t.environment,
            createdAt: t.createdAt
        )
    }

    /// Base64url as browsers write it: unpadded, or padded (`=` stripped).
    static func bytes(_ text: String, field: String) throws(NotificationError) -> [UInt8] {
        var t = Substring(text)
        while t.hasSuffix("=") { t = t.dropLast() }
        guard t.utf8.count <= 200, let b = Base64URL(text: String(t)) else {
            throw .invalidSubscription(field: field, reason: "base64url")
        }
        return b.bytes
    }

    // MARK: Events

    /// A message was queued (due now, or come due): each of its devices with a target is told, after the
    /// commit and without holding up the send.
    func messageQueued(id: String) {
        background.run { [self] in
            do {
                let targets = try await store.pushTargets(messageID: id)
                for t in targets {
                    deliver(
                        t,
                        payload: ["kind": "message", "id": id],
                        ttl: Self.messageTTL,
                        urgency: .normal,
                        topic: nil
                    )
                }
            } catch {
                logger.warning("the devices of message \(id) could not be told of it: \(type(of: error))")
            }
        }
    }

    /// A sign-in asks these authenticators to approve: each is told, for as long as the request lives; a
    /// second push for the same request replaces the first at the push service (its topic).
    func approvalRequested(devices: [String], transactionID: String, expiresAt: Date) {
        let ttl = max(1, Int(expiresAt.timeIntervalSince(clock.now()).rounded(.down)))
        let topic = String(Base64URL(Array(SHA256.hash(data: Array(transactionID.utf8)))).text.prefix(32))
        background.run { [self] in
            do {
                for t in try await store.pushTargets(deviceIDs: devices) {
                    deliver(
                        t,
                        payload: ["kind": "approval", "id": transactionID, "device": t.deviceID],
                        ttl: ttl,
                        urgency: .high,
                        topic: topic
                    )
                }
            } catch {
                logger.warning("the authenticators could not be told of a sign-in request: \(type(of: error))")
            }
        }
    }

    private func deliver(
        _ t: PushTarget,
        payload: [String: String],
        ttl: Int,
        urgency: WebPushSender.Urgency,
        topic: String?
    ) {
        switch t.channel {
        case .webPush:
            webPush.enqueue(.init(target: t, payload: Self.encode(payload), ttl: ttl, urgency: urgency, topic: topic))
        case .apns:
            // Sent by the APNs provider once it is configured (issue 37 §3); counted until then.
            metrics.failed(.apns)
        }
    }

    /// The payload's JSON, keys sorted: `{"id":…,"kind":…}`.
    static func encode(_ payload: [String: String]) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(payload)) ?? Data("{}".utf8))
    }
}
