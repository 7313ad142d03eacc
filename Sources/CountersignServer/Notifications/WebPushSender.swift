import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import Logging
import NIOPosix
import Synchronization

/// Sends Web Push notifications (RFC 8030, docs/PROTOCOL.md §2.2): the payload sealed to the subscription
/// (RFC 8291, padded to one size), the VAPID JWT (RFC 8292) made once per push service an hour, one bounded
/// queue per push service (a slow or failing one fills only its own), bounded retries on 429, 5xx and
/// network failures, and a 404 or 410 removing the subscription. Nothing waits for it: `enqueue` returns
/// at once.
package final class WebPushSender: Sendable {
    struct Job: Sendable {
        let target: PushTarget
        let payload: [UInt8]
        /// Seconds the push service keeps it for a browser that is offline.
        let ttl: Int
        let urgency: Urgency
        /// Replaces an undelivered push of the same topic (RFC 8030 §5.4).
        let topic: String?
        var attempt = 0
    }

    enum Urgency: String, Sendable { case normal, high }

    /// One POST, as the transport sends it. `pinned`: the address the host was checked at, connected to
    /// instead of resolving again (a name that changes its address between the check and the connection
    /// must not reach an internal one); nil for a host allowed by name.
    package struct Request: Sendable {
        package let url: URL
        package let headers: [(String, String)]
        package let body: [UInt8]
        package let pinned: String?
    }

    package struct Answer: Sendable {
        let status: Int
        let retryAfter: TimeInterval?
        package init(status: Int, retryAfter: TimeInterval? = nil) {
            self.status = status
            self.retryAfter = retryAfter
        }
    }

    package typealias Transport = @Sendable (Request) async throws -> Answer
    package typealias Resolver = @Sendable (_ host: String) async -> [[UInt8]]

    /// Every payload is sealed padded to this many bytes: a push's length says nothing of its kind.
    static let paddedSize = 256
    /// Jobs waiting per push service; more are dropped (counted).
    static let queueCapacity = 4096
    /// POSTs in flight per push service.
    static let inFlight = 32
    /// Waits before each try after the first (a `Retry-After` of up to a minute is honoured instead).
    static let backoff: [Duration] = [.seconds(1), .seconds(5), .seconds(20)]
    /// How long a host's checked addresses are used before it is resolved again.
    static let resolveFor: Duration = .seconds(60)
    /// A VAPID JWT is valid 12 hours; one is made per push service per hour.
    static let vapidRefresh: TimeInterval = 3600

    let vapid: VAPIDKey
    let subject: String?
    let policy: PushEndpointPolicy
    let store: any NotificationStore
    let metrics: NotificationMetrics
    let background: BackgroundWork
    let clock: any WallClock
    let logger: Logger
    let transport: Transport
    let resolver: Resolver

    private let queues = Mutex<[String: AsyncStream<Job>.Continuation]>([:])
    private let tokens = Mutex<[String: (header: String, made: Date)]>([:])
    private let resolved = Mutex<[String: (addresses: [[UInt8]], at: ContinuousClock.Instant)]>([:])

    init(
        vapid: VAPIDKey,
        subject: String?,
        policy: PushEndpointPolicy,
        store: any NotificationStore,
        metrics: NotificationMetrics,
        background: BackgroundWork,
        clock: any WallClock,
        logger: Logger,
        transport: Transport? = nil,
        resolver: Resolver? = nil
    ) {
        self.vapid = vapid
        self.subject = subject
        self.policy = policy
        self.store = store
        self.metrics = metrics
        self.background = background
        self.clock = clock
        self.logger = logger
        self.transport = transport ?? PushHTTPClients.webPush
        self.resolver = resolver ?? { host in await PushHTTPClients.resolve(host) }
    }

    /// Queues `job` on its push service's queue (made, with its worker, on first use); counted as dropped
    /// when that queue is full.
    func enqueue(_ job: Job) {
        guard let url = URL(string: job.target.address), let origin = Self.origin(url) else {
            metrics.failed(.webPush)
            return
        }
        let continuation = queues.withLock { queues -> AsyncStream<Job>.Continuation in
            if let c = queues[origin] { return c }
            let (stream, c) = AsyncStream<Job>.makeStream(bufferingPolicy: .bufferingOldest(Self.queueCapacity))
            queues[origin] = c
            background.run(cancellable: true) { [self] in await work(stream, origin: origin) }
            return c
        }
        switch continuation.yield(job) {
        case .enqueued: metrics.queued(.webPush, by: 1)
        case .dropped, .terminated:
            metrics.dropped(.webPush)
            logger.warning("a push to \(origin) was dropped: \(Self.queueCapacity) are already waiting for it")
        @unknown default: metrics.dropped(.webPush)
        }
    }

    private func work(_ stream: AsyncStream<Job>, origin: String) async {
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            for await job in stream {
                metrics.queued(.webPush, by: -1)
                if running >= Self.inFlight {
                    await group.next()
                    running -= 1
                }
                running += 1
                group.addTask { [self] in await send(job, origin: origin) }
            }
        }
        // Cancelled (the server stops): what is left is not sent.
        _ = queues.withLock { $0.removeValue(forKey: origin) }
    }

    private func send(_ job: Job, origin: String) async {
        guard let url = URL(string: job.target.address), let host = url.host else { return }
        let pinned: String?
        if policy.allows(host: host) {
            pinned = nil
        } else {
            let addresses = await addresses(host)
            if let why = policy.refusal(addresses: addresses, host: host) {
                metrics.failed(.webPush)
                logger.warning("a push to \(origin) was not sent: \(why)")
                return
            }
            pinned = PushEndpointPolicy.text(addresses[0])
        }
        let answer: Answer
        do {
            let body = try WebPushMessage.seal(
                job.payload,
                p256dh: job.target.p256dh,
                auth: job.target.auth,
                paddedSize: Self.paddedSize
            )
            var headers: [(String, String)] = [
                ("Authorization", try authorization(url, origin: origin)),
                ("TTL", String(job.ttl)),
                ("Content-Encoding", "aes128gcm"),
                ("Content-Type", "application/octet-stream"),
                ("Urgency", job.urgency.rawValue),
            ]
            if let topic = job.topic { headers.append(("Topic", topic)) }
            answer = try await transport(Request(url: url, headers: headers, body: body, pinned: pinned))
        } catch is WebPushMessage.Failure {
            // The keys were checked when stored: only a row altered since gets here.
            metrics.failed(.webPush)
            logger.error("a push to \(origin) could not be sealed: the stored subscription keys are not valid")
            return
        } catch {
            if Task.isCancelled { return }
            retry(job, origin: origin, after: nil, why: "\(type(of: error))")
            return
        }
        switch answer.status {
        case 200..<300:
            metrics.sent(.webPush)
        case 404, 410:
            // The browser unsubscribed, or the push service forgot it: every device it served stops being told.
            metrics.gone(.webPush)
            do { try await store.deletePushTargets(address: job.target.address) } catch {
                logger.error("a gone push subscription at \(origin) could not be deleted: \(type(of: error))")
            }
        case 429, 500..<600:
            retry(job, origin: origin, after: answer.retryAfter, why: "HTTP \(answer.status)")
        default:
            // 400 (bad headers), 401/403 (the VAPID token refused), 413: sending it again changes nothing.
            metrics.failed(.webPush)
            logger.warning(
                "a push to \(origin) was refused with HTTP \(answer.status)\(answer.status == 401 || answer.status == 403 ? ": the push service did not accept the VAPID token (is the subscription for another server's key?)" : "")"
            )
        }
    }

    private func retry(_ job: Job, origin: String, after: TimeInterval?, why: String) {
        guard job.attempt < Self.backoff.count else {
            metrics.failed(.webPush)
            logger.warning("a push to \(origin) was given up after \(job.attempt + 1) tries (\(why))")
            return
        }
        metrics.retried(.webPush)
        var again = job
        again.attempt += 1
        let next = again
        let wait = after.map { Duration.seconds(min(60, max(1, $0))) } ?? Self.backoff[job.attempt]
        background.run(cancellable: true) { [self] in
            try? await Task.sleep(for: wait)
            if Task.isCancelled { return }
            enqueue(next)
        }
    }

    /// The push service's VAPID header, made again after an hour; made under the lock, so pushes to a
    /// service that start together share one.
    private func authorization(_ url: URL, origin: String) throws -> String {
        let now = clock.now()
        return try tokens.withLock { tokens in
            if let cached = tokens[origin], now.timeIntervalSince(cached.made) < Self.vapidRefresh, now >= cached.made {
                return cached.header
            }
            let header = try vapid.authorization(endpoint: url, subject: subject, now: now)
            metrics.vapidTokens.increment()
            tokens[origin] = (header, now)
            return header
        }
    }

    private func addresses(_ host: String) async -> [[UInt8]] {
        let now = ContinuousClock.now
        if let cached = resolved.withLock({ $0[host] }), now - cached.at < Self.resolveFor { return cached.addresses }
        let addresses = await resolver(host)
        resolved.withLock { $0[host] = (addresses, now) }
        return addresses
    }

    static func origin(_ url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        return "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }
}
