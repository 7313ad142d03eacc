import CountersignAPI
import CountersignCrypto
import Foundation
import Logging
import Synchronization

/// Sends Web Push notifications (RFC 8030, docs/PROTOCOL.md §2.2): the payload sealed to the subscription
/// (RFC 8291, padded to one size), the VAPID JWT (RFC 8292) made once per push service an hour, one bounded
/// queue per push service (a slow or failing one fills only its own; `DeliveryQueues`), bounded retries on
/// 429, 5xx and network failures, and a 404 or 410 removing the subscription. A host name is resolved before
/// each connection (at most once a minute) and the connection made to the address checked. Nothing waits for
/// it: `enqueue` returns at once.
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
    /// must not reach an internal one); nil for an IP literal (itself checked) or a host allowed by name.
    package struct Request: Sendable {
        package let url: URL
        package let host: String
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

    /// Every payload is sealed padded to this many bytes: a push's length says nothing of what it is.
    static let paddedSize = 256
    /// Jobs waiting per push service and in all, push services at once, and POSTs in flight per push service.
    static let queueCapacity = 1024
    static let totalCapacity = 16384
    static let maxServices = 64
    static let inFlight = 16
    /// Waits before each try after the first (a `Retry-After` of up to a minute is honoured instead).
    static let backoff: [Duration] = [.seconds(1), .seconds(5), .seconds(20)]
    /// How long a host's checked addresses are used before it is resolved again.
    static let resolveFor: Duration = .seconds(60)
    /// A push service that failed this many times in a row (no answer, 429, 5xx) is paused: its pushes are
    /// dropped for `pauseFor`, so that one that hangs cannot hold the queues' room.
    static let failuresBeforePause = 5
    static let pauseFor: Duration = .seconds(60)
    /// A VAPID JWT is valid 12 hours; one is made per push service per hour.
    static let vapidRefresh: TimeInterval = 3600

    let vapid: VAPIDKey
    let subject: String?
    let policy: PushEndpointPolicy
    let store: any NotificationStore
    let metrics: NotificationMetrics
    let clock: any WallClock
    let logger: Logger
    let transport: Transport
    let resolver: Resolver
    private let queues: DeliveryQueues<Job>
    private let said = LogLimiter()
    private let failing = Mutex<[String: (count: Int, pausedUntil: ContinuousClock.Instant?)]>([:])
    private let tokens = Mutex<[String: (header: String, made: Date)]>([:])
    private let checked = Mutex<[String: PushEndpointPolicy.Endpoint]>([:])
    static let checkedKept = 4096
    private let resolved = Mutex<[String: (addresses: [[UInt8]], pinned: [UInt8], at: ContinuousClock.Instant)]>([:])

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
        self.clock = clock
        self.logger = logger
        self.transport = transport ?? PushHTTPClients.webPush
        self.resolver = resolver ?? { host in await PushHTTPClients.resolve(host) }
        queues = DeliveryQueues(
            capacity: Self.queueCapacity,
            totalCapacity: Self.totalCapacity,
            maxServices: Self.maxServices,
            inFlight: Self.inFlight,
            background: background
        ) { metrics.queued(.webPush, by: -1) }
    }

    /// Queues `job` on its push service's queue; counted as dropped when the queues are full.
    func enqueue(_ job: Job) {
        // Checked again: a row stored before a rule changed, or altered, is not requested.
        guard let endpoint = checkedEndpoint(job.target.address) else {
            metrics.failed(.webPush)
            return
        }
        if paused(endpoint.origin) {
            metrics.dropped(.webPush)
            return
        }
        switch queues.enqueue(job, service: endpoint.origin, send: { [self] job in await send(job, endpoint) }) {
        case .queued: metrics.queued(.webPush, by: 1)
        case .dropped:
            metrics.dropped(.webPush)
            if said.allows("dropped " + endpoint.origin) {
                logger.warning("pushes to \(endpoint.origin) are being dropped: the push queues are full")
            }
        }
    }

    private func send(_ job: Job, _ endpoint: PushEndpointPolicy.Endpoint) async {
        let origin = endpoint.origin
        var pinned: String?
        if !endpoint.allowed {
            let bare = PushEndpointPolicy.bare(endpoint.host)
            let (addresses, pin) = await addresses(bare)
            if addresses.isEmpty {
                // No answer from the name servers (or none yet): tried again, as a push service that did not answer.
                failed(origin)
                retry(job, origin: origin, after: nil, why: "no address for its host")
                return
            }
            if let why = policy.refusal(addresses: addresses) {
                metrics.failed(.webPush)
                if said.allows("refused " + origin) { logger.warning("pushes to \(origin) are not sent: \(why)") }
                return
            }
            if !endpoint.isAddress { pinned = PushEndpointPolicy.text(pin) }
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
                ("Authorization", try authorization(origin)),
                ("TTL", String(job.ttl)),
                ("Content-Encoding", "aes128gcm"),
                ("Content-Type", "application/octet-stream"),
                ("Urgency", job.urgency.rawValue),
            ]
            if let topic = job.topic { headers.append(("Topic", topic)) }
            let request = Request(url: endpoint.url, host: endpoint.host, headers: headers, body: body, pinned: pinned)
            answer = try await transport(request)
        } catch is WebPushMessage.Failure {
            // The keys were checked when stored: only a row altered since gets here.
            metrics.failed(.webPush)
            logger.error("a push to \(origin) could not be sealed: the stored subscription keys are not valid")
            return
        } catch {
            if Task.isCancelled { return }
            failed(origin)
            retry(job, origin: origin, after: nil, why: "\(type(of: error))")
            return
        }
        if answer.status == 429 || answer.status >= 500 { failed(origin) } else { succeeded(origin) }
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
            if said.allows("status \(answer.status) " + origin) {
                let vapidWords =
                    answer.status == 401 || answer.status == 403
                    ? ": it did not accept the VAPID token (a subscription made with another server's key?)" : ""
                logger.warning("a push to \(origin) was refused with HTTP \(answer.status)\(vapidWords)")
            }
        }
    }

    /// The policy's verdict on a stored address, kept: parsing it again for every push cost more than sealing the
    /// push (the rule does not change while the server runs).
    private func checkedEndpoint(_ address: String) -> PushEndpointPolicy.Endpoint? {
        if let known = checked.withLock({ $0[address] }) { return known }
        guard let endpoint = try? policy.check(endpoint: address) else { return nil }
        checked.withLock {
            if $0.count >= Self.checkedKept { $0.removeAll() }
            $0[address] = endpoint
        }
        return endpoint
    }

    private func paused(_ origin: String) -> Bool {
        failing.withLock { $0[origin]?.pausedUntil.map { ContinuousClock.now < $0 } ?? false }
    }

    private func failed(_ origin: String) {
        let pausedNow = failing.withLock { failing -> Bool in
            if failing.count >= 4 * Self.maxServices { failing.removeAll() }
            var entry = failing[origin] ?? (0, nil)
            if let until = entry.pausedUntil, ContinuousClock.now < until { return false }
            entry.count += 1
            let pause = entry.count >= Self.failuresBeforePause
            entry = pause ? (0, ContinuousClock.now + Self.pauseFor) : (entry.count, nil)
            failing[origin] = entry
            return pause
        }
        if pausedNow && said.allows("paused " + origin) {
            logger.warning(
                "\(origin) failed \(Self.failuresBeforePause) times in a row: its pushes are dropped for \(Self.pauseFor)"
            )
        }
    }

    private func succeeded(_ origin: String) {
        if failing.withLock({ $0[origin] != nil }) { failing.withLock { _ = $0.removeValue(forKey: origin) } }
    }

    private func retry(_ job: Job, origin: String, after: TimeInterval?, why: String) {
        guard job.attempt < Self.backoff.count else {
            metrics.failed(.webPush)
            if said.allows("given up " + origin) {
                logger.warning("a push to \(origin) was given up after \(job.attempt + 1) tries (\(why))")
            }
            return
        }
        metrics.retried(.webPush)
        var again = job
        again.attempt += 1
        let next = again
        let wait = after.map { Duration.seconds(min(60, max(1, $0))) } ?? Self.backoff[job.attempt]
        queues.later(wait) { [self] in enqueue(next) }
    }

    /// The push service's VAPID header, made again after an hour; made under the lock, so pushes to a
    /// service that start together share one.
    private func authorization(_ origin: String) throws -> String {
        let now = clock.now()
        return try tokens.withLock { tokens in
            if let cached = tokens[origin], now.timeIntervalSince(cached.made) < Self.vapidRefresh, now >= cached.made {
                return cached.header
            }
            let header = try vapid.authorization(audience: origin, subject: subject, now: now)
            metrics.vapidTokens.increment()
            if tokens.count >= 4 * Self.maxServices { tokens.removeAll() }
            tokens[origin] = (header, now)
            return header
        }
    }

    /// The host's addresses, and the one to connect to: the one used before while the host still has it (a
    /// name that rotates its addresses does not change connections each minute).
    private func addresses(_ host: String) async -> (all: [[UInt8]], pinned: [UInt8]) {
        let now = ContinuousClock.now
        let cached = resolved.withLock { $0[host] }
        if let cached, now - cached.at < Self.resolveFor { return (cached.addresses, cached.pinned) }
        let addresses = await resolver(host)
        let pinned = cached.map(\.pinned).flatMap { addresses.contains($0) ? $0 : nil } ?? addresses.first ?? []
        // Nothing (the name servers did not answer) is not kept: the next push asks again.
        guard !addresses.isEmpty else { return ([], []) }
        resolved.withLock {
            if $0.count >= 4 * Self.maxServices { $0.removeAll() }
            $0[host] = (addresses, pinned, now)
        }
        return (addresses, pinned)
    }
}
