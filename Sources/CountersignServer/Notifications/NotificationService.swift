import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import Logging
import Synchronization

/// Telling devices of events while nothing of them is connected (docs/PROTOCOL.md §2.2–2.3): each device's push
/// target (a Web Push subscription, an APNs token), and a notification per event per device, sent by the node
/// that committed the event (so once, however many nodes there are). A push says only what happened and its
/// id: `{"kind":"message","id":…}` or `{"kind":"approval","id":TRANSACTION,"device":…}`; the device fetches the
/// rest over its own session.
public final class NotificationService: Sendable {
    let store: any NotificationStore
    let policy: PushEndpointPolicy
    let webPush: WebPushSender
    let apns: APNsSender?
    let metrics: NotificationMetrics
    let background: BackgroundWork
    let clock: any WallClock
    let logger: Logger
    /// Devices someone looks at through a live connection: no push for them.
    let presence: LivePresence
    /// Target changes per device: 10 per 10 minutes (each may look a name up).
    let changes = AddressThrottle(.init(capacity: 10, window: 600))
    /// How long a message push is kept by its push service for an offline device.
    static let messageTTL = 24 * 3600
    /// Messages queued and not yet looked up, read together (one query for many under load).
    private let queued = Mutex<(ids: [String], reading: Bool)>(([], false))
    static let readAtOnce = 500
    static let waitingAtMost = 100_000

    init(
        store: any NotificationStore,
        policy: PushEndpointPolicy,
        webPush: WebPushSender,
        apns: APNsSender?,
        metrics: NotificationMetrics,
        background: BackgroundWork,
        clock: any WallClock,
        logger: Logger
    ) {
        self.store = store
        self.policy = policy
        self.webPush = webPush
        self.apns = apns
        self.metrics = metrics
        self.background = background
        self.clock = clock
        self.logger = logger
        presence = LivePresence(
            store: store,
            background: background,
            clock: clock,
            logger: logger,
            node: UUID().uuidString
        )
    }

    /// A device's push connection here is seen (connected, or its page shown) or no longer (closed, hidden).
    func connection(_ deviceID: String, seen: Bool) { presence.changed(deviceID, seen: seen) }

    // MARK: Targets

    private func admit(_ auth: DeviceAuthenticated) throws {
        if let wait = changes.take("device " + auth.device.id, now: clock.now()) {
            throw RequestError.rateLimited(retryAfter: wait)
        }
    }

    /// Stores the browser's subscription as the device's target, once checked: an https endpoint (or http to
    /// a host allowed) of at most 1 KiB whose host resolves only to public addresses, a P-256 key on the
    /// curve, a 16-byte secret.
    public func subscribe(
        _ auth: DeviceAuthenticated,
        _ subscription: WebPushSubscription
    ) async throws
        -> PushTargetInfo
    {
        let endpoint = try policy.check(endpoint: subscription.endpoint)
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
        // The same subscription again (each session of the device registers it): nothing to do, nothing looked up.
        if let kept = try await store.pushTarget(deviceID: auth.device.id), kept.channel == .webPush,
            kept.address == endpoint.text, kept.p256dh == p256dh, kept.auth == secret
        {
            return info(kept)
        }
        try admit(auth)
        if !endpoint.allowed {
            let addresses = await webPush.resolver(PushEndpointPolicy.bare(endpoint.host))
            if let why = policy.refusal(addresses: addresses) {
                logger.debug("a push subscription at \(endpoint.origin) was refused: \(why)")
                throw NotificationError.endpointNotPublic(endpoint.host)
            }
        }
        let target = PushTarget(
            deviceID: auth.device.id,
            accountID: auth.account.id,
            channel: .webPush,
            address: endpoint.text,
            p256dh: p256dh,
            auth: secret,
            environment: nil,
            createdAt: clock.now()
        )
        try await save(target)
        return info(target)
    }

    /// Stores an iOS app's device token as the device's target.
    public func register(_ auth: DeviceAuthenticated, _ token: APNsDeviceToken) async throws -> PushTargetInfo {
        guard apns != nil else { throw NotificationError.apnsOff }
        let hex = token.token.lowercased()
        guard (16...200).contains(hex.utf8.count), Hex.decode(hex) != nil else {
            throw NotificationError.invalidSubscription(
                field: "token",
                reason: "the device token's bytes in hex (8 to 100 bytes)"
            )
        }
        guard ["production", "sandbox"].contains(token.environment) else {
            throw NotificationError.invalidSubscription(field: "environment", reason: "production or sandbox")
        }
        try admit(auth)
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
        try await save(target)
        return info(target)
    }

    /// A target replacing another keeps its device's mark; a first one is marked at once when its device is seen
    /// through a connection here (another node's connection marks it at its next renewal).
    private func save(_ target: PushTarget) async throws {
        guard try await store.savePushTarget(target) else { throw NotificationError.none }
        if presence.isSeen(target.deviceID) { presence.changed(target.deviceID, seen: true) }
    }

    public func target(_ auth: DeviceAuthenticated) async throws -> PushTargetInfo {
        guard let t = try await store.pushTarget(deviceID: auth.device.id) else { throw NotificationError.none }
        return info(t)
    }

    /// Turning notifications off: idempotent.
    public func remove(_ auth: DeviceAuthenticated) async throws {
        _ = try await store.deletePushTarget(deviceID: auth.device.id)
    }

    func info(_ t: PushTarget) -> PushTargetInfo {
        PushTargetInfo(
            channel: t.channel.rawValue,
            origin: t.channel == .webPush ? (try? policy.check(endpoint: t.address))?.origin : nil,
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
    /// commit and without holding up the send. Messages queued meanwhile are looked up together, one reader
    /// at a time.
    func messageQueued(id: String) {
        let start = queued.withLock { q -> Bool in
            guard q.ids.count < Self.waitingAtMost else { return false }
            q.ids.append(id)
            if q.reading { return false }
            q.reading = true
            return true
        }
        if start { background.run { [self] in await readQueued() } }
    }

    private func readQueued() async {
        while true {
            let ids = queued.withLock { q -> [String] in
                let batch = Array(q.ids.prefix(Self.readAtOnce))
                q.ids.removeFirst(batch.count)
                if batch.isEmpty { q.reading = false }
                return batch
            }
            if ids.isEmpty { return }
            do {
                for t in try await store.pushTargets(messageIDs: ids, now: clock.now()) {
                    deliver(t.target, kind: "message", id: t.messageID, expires: nil)
                }
            } catch {
                logger.warning("the devices of \(ids.count) messages could not be told of them: \(type(of: error))")
            }
        }
    }

    /// A sign-in asks these authenticators to approve: each is told, for as long as the request lives; a
    /// second push for the same request replaces the first at the push service.
    func approvalRequested(devices: [String], transactionID: String, expiresAt: Date) {
        background.run { [self] in
            do {
                for t in try await store.pushTargets(deviceIDs: devices, now: clock.now()) {
                    deliver(t, kind: "approval", id: transactionID, expires: expiresAt)
                }
            } catch {
                logger.warning("the authenticators could not be told of a sign-in request: \(type(of: error))")
            }
        }
    }

    private func deliver(_ t: PushTarget, kind: String, id: String, expires: Date?) {
        let now = clock.now()
        let approval = kind == "approval"
        let ttl = expires.map { max(1, Int($0.timeIntervalSince(now).rounded(.down))) } ?? Self.messageTTL
        // A collapse key: the first 32 characters of base64url(SHA-256(id)), fit for both channels.
        let collapse = approval ? String(Base64URL(Array(SHA256.hash(data: Array(id.utf8)))).text.prefix(32)) : nil
        switch t.channel {
        case .webPush:
            var payload = ["kind": kind, "id": id]
            if approval { payload["device"] = t.deviceID }
            webPush.enqueue(
                .init(
                    target: t,
                    payload: Self.encode(payload),
                    ttl: ttl,
                    urgency: approval ? .high : .normal,
                    topic: collapse
                )
            )
        case .apns:
            guard let apns else {
                metrics.failed(.apns)  // a token stored while APNs was configured, and it is no longer
                return
            }
            apns.enqueue(
                .init(
                    target: t,
                    payload: APNsPayload.encode(
                        kind: kind,
                        id: id,
                        device: t.deviceID,
                        timeSensitive: apns.settings.timeSensitive
                    ),
                    priority: approval ? 10 : 5,
                    expiration: Int(now.timeIntervalSince1970) + ttl,
                    collapseID: collapse
                )
            )
        }
    }

    /// The payload's JSON, keys sorted: `{"id":…,"kind":…}`.
    static func encode(_ payload: [String: String]) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(payload)) ?? Data("{}".utf8))
    }
}
