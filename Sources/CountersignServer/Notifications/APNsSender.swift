import CountersignAPI
import Crypto
import Foundation
import Logging
import Synchronization

/// An APNs provider (docs/PROTOCOL.md §2.3): HTTP/2 with token authentication, an ES256 JWT (`kid` the Key ID,
/// `iss` the Team ID, `iat`) made once and used for 40 minutes (Apple refuses one older than an hour and
/// fresh ones more often than every 20 minutes), a queue per environment (production, sandbox), bounded
/// retries on 429 and 5xx, and a token Apple says is gone (410 `Unregistered`, 400 `BadDeviceToken`)
/// deleted. A refused provider token (403) is said in the log with what to fix, and not retried in a loop.
package final class APNsSender: Sendable {
    struct Job: Sendable {
        let target: PushTarget
        let payload: [UInt8]
        /// 10: at once (a sign-in request); 5: when it suits the phone (a message).
        let priority: Int
        /// Seconds since 1970 after which APNs stops trying.
        let expiration: Int
        let collapseID: String?
        var attempt = 0
    }

    package struct Request: Sendable {
        package let url: URL
        package let headers: [(String, String)]
        package let body: [UInt8]
        /// `production` or `sandbox`: which connection carries it.
        package let environment: String
    }

    package struct Answer: Sendable {
        let status: Int
        /// APNs's `reason` (`Unregistered`, `ExpiredProviderToken`…), when it gave one.
        let reason: String?
        let retryAfter: TimeInterval?
        package init(status: Int, reason: String? = nil, retryAfter: TimeInterval? = nil) {
            self.status = status
            self.reason = reason
            self.retryAfter = retryAfter
        }
    }

    package typealias Transport = @Sendable (Request) async throws -> Answer

    static let tokenLifetime: TimeInterval = 40 * 60
    static let minimumTokenAge: TimeInterval = 20 * 60
    static let queueCapacity = 4096
    static let inFlight = 64
    static let backoff: [Duration] = [.seconds(1), .seconds(5), .seconds(20)]

    let settings: APNsSettings
    let store: any NotificationStore
    let metrics: NotificationMetrics
    let clock: any WallClock
    let logger: Logger
    let transport: Transport
    private let queues: DeliveryQueues<Job>
    private let token = Mutex<(jwt: String, made: Date)?>(nil)
    /// A refused provider token, and other refusals, said in the log once a minute at most.
    private let said = LogLimiter()

    init(
        settings: APNsSettings,
        store: any NotificationStore,
        metrics: NotificationMetrics,
        background: BackgroundWork,
        clock: any WallClock,
        logger: Logger,
        transport: Transport? = nil
    ) {
        self.settings = settings
        self.store = store
        self.metrics = metrics
        self.clock = clock
        self.logger = logger
        self.transport = transport ?? APNsHTTPClients.transport(caFile: settings.caFile)
        // Two services at most (production, sandbox), one HTTP/2 connection each.
        queues = DeliveryQueues(
            capacity: Self.queueCapacity,
            totalCapacity: 2 * Self.queueCapacity,
            maxServices: 2,
            inFlight: Self.inFlight,
            background: background
        ) { metrics.queued(.apns, by: -1) }
    }

    func enqueue(_ job: Job) {
        let environment = job.target.environment ?? "production"
        switch queues.enqueue(job, service: environment, send: { [self] job in await send(job) }) {
        case .queued: metrics.queued(.apns, by: 1)
        case .dropped:
            metrics.dropped(.apns)
            if said.allows("dropped") {
                logger.warning(
                    "APNs pushes are being dropped: \(Self.queueCapacity) are already waiting for \(environment)"
                )
            }
        }
    }

    /// The provider token, made again after 40 minutes, or when APNs said `expired` was (the one still kept,
    /// and at least 20 minutes old: APNs refuses fresh ones more often than that, and pushes in flight that all
    /// heard "expired" renew it once).
    func providerToken(expired: String? = nil) throws -> String {
        let now = clock.now()
        return try token.withLock { token in
            if let t = token, now >= t.made {
                let age = now.timeIntervalSince(t.made)
                let renew = expired == t.jwt && age >= Self.minimumTokenAge
                if age < Self.tokenLifetime && !renew { return t.jwt }
            }
            let header = #"{"alg":"ES256","kid":"\#(settings.keyID)"}"#
            let claims = #"{"iss":"\#(settings.teamID)","iat":\#(Int(now.timeIntervalSince1970))}"#
            let input = Base64URL(Array(header.utf8)).text + "." + Base64URL(Array(claims.utf8)).text
            let signature = try settings.key.signature(for: Array(input.utf8)).rawRepresentation
            let jwt = input + "." + Base64URL(Array(signature)).text
            metrics.apnsTokens.increment()
            token = (jwt, now)
            return jwt
        }
    }

    private func send(_ job: Job) async {
        let environment = job.target.environment ?? "production"
        let url = settings.endpoint(environment).appendingPathComponent("3/device/\(job.target.address)")
        let answer: Answer
        let provider: String
        do {
            provider = try providerToken()
            var headers: [(String, String)] = [
                ("authorization", "bearer \(provider)"),
                ("apns-topic", settings.topic),
                ("apns-push-type", "alert"),
                ("apns-priority", String(job.priority)),
                ("apns-expiration", String(job.expiration)),
                ("content-type", "application/json"),
            ]
            if let id = job.collapseID { headers.append(("apns-collapse-id", id)) }
            answer = try await transport(
                Request(url: url, headers: headers, body: job.payload, environment: environment)
            )
        } catch {
            if Task.isCancelled { return }
            retry(job, after: nil, why: "\(type(of: error))")
            return
        }
        switch (answer.status, answer.reason) {
        case (200, _):
            metrics.sent(.apns)
        case (410, _), (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"):
            // The app was removed, or the token is not one (another app's, another environment's).
            metrics.gone(.apns)
            do { try await store.deletePushTarget(deviceID: job.target.deviceID, address: job.target.address) } catch {
                logger.error("an APNs token Apple said is gone could not be deleted: \(type(of: error))")
            }
        case (403, "ExpiredProviderToken") where job.attempt == 0:
            // Made again now, and tried once more with it (a clock that is off makes the next one expire too).
            _ = try? providerToken(expired: provider)
            retry(job, after: 0, why: "ExpiredProviderToken")
        case (403, let reason):
            metrics.failed(.apns)
            if said.allows("403") {
                logger.error(
                    "APNs refused the provider token (\(reason ?? "403")): check apns-key-id, apns-team-id and apns-key-file (a key with APNs enabled, not revoked), and that this machine's clock is right; pushes are not sent until it is fixed"
                )
            }
        case (429, _), (500..<600, _):
            retry(job, after: answer.retryAfter, why: "HTTP \(answer.status) \(answer.reason ?? "")")
        default:
            metrics.failed(.apns)
            if said.allows("\(answer.status) \(answer.reason ?? "")") {
                logger.warning("APNs refused a push: HTTP \(answer.status) \(answer.reason ?? "")")
            }
        }
    }

    private func retry(_ job: Job, after: TimeInterval?, why: String) {
        guard job.attempt < Self.backoff.count else {
            metrics.failed(.apns)
            if said.allows("given up") {
                logger.warning("an APNs push was given up after \(job.attempt + 1) tries (\(why))")
            }
            return
        }
        metrics.retried(.apns)
        var again = job
        again.attempt += 1
        let next = again
        let wait = after.map { Duration.seconds(min(60, max(0, $0))) } ?? Self.backoff[job.attempt]
        queues.later(wait) { [self] in enqueue(next) }
    }
}
