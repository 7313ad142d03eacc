import CountersignCrypto
import Crypto
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import SQLKit
import ServiceLifecycle
import Synchronization

/// Builds and runs the Countersign server.
public enum CountersignServer {
    /// The router with every route and middleware, over the services of an open database. Tests drive it
    /// directly.
    package static func buildRouter(
        _ services: ServerServices,
        config: ServerConfiguration,
        clock: any WallClock
    ) throws -> Router<AppContext> {
        let storage = services.storage
        let router = Router(context: AppContext.self)
        if !config.trustedProxies.isEmpty {
            router.add(middleware: TrustedProxyMiddleware(proxies: config.trustedProxies))
        }
        // Metrics outside problems: they must see the problem's status (401, 405, 429…) and time every
        // request, which they only do for a response, not for a thrown error.
        router.add(middleware: SecurityHeadersMiddleware())
        router.add(middleware: MetricsMiddleware())
        router.add(
            middleware: ProblemMiddleware(clock: clock, maxBody: config.maxBodyBytes, adminContact: config.adminContact)
        )
        router.get("healthz") { _, _ in
            _ = try await storage.database.transaction { _ in () }
            return "ok\n"
        }
        router.get("openapi.yaml") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/yaml"],
                body: .init(byteBuffer: ByteBuffer(bytes: openAPIDocument))
            )
        }
        try WebClient.shipped.get().register(on: router)
        let metricsToken = config.metricsToken.map { Array($0.utf8) }
        router.get("metrics") { request, _ in
            guard let metricsToken else { throw Problem.metricsOff }
            guard let given = APIRoutes.bearerToken(request.headers[.authorization]),
                ConstantTime.equal(Array(given.utf8), metricsToken)
            else { throw Problem.metricsToken }
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(bytes: ServerMetrics.text()))
            )
        }
        let sessions = services.sessions
        let devices = services.devices
        let push = services.push
        DeviceRoutes(accounts: services.accounts, devices: devices, sessions: sessions, maxBody: config.maxBodyBytes)
            .register(on: router)
        MessageRoutes(sessions: sessions, messages: services.messages, push: push).register(on: router)
        PushRoutes(sessions: sessions, push: push, vapid: services.vapid).register(on: router)
        NotificationRoutes(sessions: sessions, notifications: services.notifications, maxBody: config.maxBodyBytes)
            .register(on: router)
        AccountRoutes(
            service: services.accounts,
            sessions: sessions,
            signIn: SignInFlow(signIn: services.signIn, mfa: services.mfa),
            maxBody: config.maxBodyBytes
        ).register(on: router)
        MFARoutes(
            sessions: sessions,
            mfa: services.mfa,
            push: push,
            maxBody: config.maxBodyBytes,
            publicURL: config.publicURL
        ).register(on: router)
        PasskeyRoutes(sessions: sessions, mfa: services.mfa, passkeys: services.passkeys, maxBody: config.maxBodyBytes)
            .register(on: router)
        SessionBindingRoutes(bindings: services.bindings, sessions: sessions, maxBody: config.maxBodyBytes)
            .register(on: router)
        OIDCRoutes(
            oidc: services.oidc,
            sessions: sessions,
            backChannel: services.backChannel,
            background: services.background,
            maxBody: config.maxBodyBytes
        ).register(on: router)
        return router
    }

    static let openAPIDocument: [UInt8] = {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml"),
            let data = try? Data(contentsOf: url)
        else { return [] }
        return Array(data)
    }()

    /// Checks that the address can be bound, opens the database, runs migrations, and serves until
    /// SIGINT or SIGTERM. `onListening` receives the address actually bound (useful with port 0).
    /// A failure before the server listens leaves no new SQLite file behind.
    public static func run(
        config: ServerConfiguration,
        clock: any WallClock = SystemClock(),
        random: any RandomSource = SystemRandomSource(),
        logger: Logger,
        onListening: @escaping @Sendable (String) -> Void
    ) async throws {
        // Before the database: a busy port or a wrong --host must not leave a fresh database file.
        try ListenAddress.check(host: config.host, port: config.port)
        // One serving process per SQLite file (a missing directory is left to `open` to explain). Only a
        // file this process made, and holds the lock of, is deleted on a failure before listening.
        var createdFile: String?
        var serveLock: SQLiteServeLock?
        if case .sqlite(let path) = config.database,
            FileManager.default.fileExists(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path)
        {
            let lock = try SQLiteServeLock(path: path)
            if lock.created { createdFile = path }
            serveLock = lock
        }
        let listening = Mutex(false)
        let storage: any ServerStorage
        do {
            storage = try await ServerDatabase.open(config.database, logger: logger, groupCommit: config.sendBatch)
        } catch {
            removeNewDatabase(createdFile)
            throw error
        }
        defer { withExtendedLifetime(serveLock) {} }
        // What requests left running is waited for (or cancelled) before the storage closes.
        let background = Mutex<BackgroundWork?>(nil)
        // This node's live-connection marks, cleared before the storage closes.
        let presence = Mutex<LivePresence?>(nil)
        do {
            if let clients = config.oidcClients {
                let applied = try await OIDCAdmin.apply(clients, storage: storage, now: clock.now())
                if applied != OIDCAdmin.Applied() {
                    logger.notice(
                        "OpenID Connect clients from the configuration file: added \(applied.added), updated \(applied.updated), removed \(applied.removed)"
                    )
                }
            }
            let services = try await ServerServices.assemble(
                storage: storage,
                config: config,
                clock: clock,
                random: random,
                logger: logger
            )
            background.withLock { $0 = services.background }
            presence.withLock { $0 = services.notifications.presence }
            let purge = PurgeService(storage: storage, clock: clock, config: config, logger: logger)
            // A failed purge (a backlog, a busy database) is retried in 10 minutes; it does not stop the server.
            do { try await purge.purge() } catch {
                logger.warning("purge failed", metadata: ["error": "\(type(of: error))"])
            }
            let router = try buildRouter(services, config: config, clock: clock)
            let push = services.push
            let app = Application(
                router: router,
                server: httpServer(config, push: push),
                configuration: .init(address: .hostname(config.host, port: config.port), serverName: "countersign"),
                onServerRunning: { channel in
                    listening.withLock { $0 = true }
                    let port = channel.localAddress?.port ?? config.port
                    onListening("http://\(ListenAddress.display(config.host, port))")
                },
                logger: logger
            )
            var running = app
            running.addServices(purge, PushRunner(push: push))
            try await running.runService()
        } catch {
            await presence.withLock({ $0 })?.clearAll()
            await background.withLock({ $0 })?.drain()
            await storage.close()
            if !listening.withLock({ $0 }) {
                removeNewDatabase(createdFile)
                // Another process took the port between the check and the bind.
                if let message = ListenAddress.describe(bindError: error, host: config.host, port: config.port) {
                    throw ConfigurationError(message)
                }
            }
            throw error
        }
        await presence.withLock({ $0 })?.clearAll()
        await background.withLock({ $0 })?.drain()
        await storage.close()
    }

    /// HTTP/1.1 with the idle timeout (which also bounds how long a request's headers may take) and
    /// the body read timeout; a first request that upgrades `GET /v1/push` becomes a push connection.
    static func httpServer(_ config: ServerConfiguration, push: PushService) -> HTTPServerBuilder {
        let read = TimeAmount.milliseconds(Int64(config.readTimeout * 1000))
        let idle = TimeAmount.milliseconds(Int64(config.idleTimeout * 1000))
        let limiter =
            config.connectionsPerAddress > 0
            ? ConnectionLimiter(limit: config.connectionsPerAddress, exempt: config.trustedProxies) : nil
        return HTTPServerBuilder { responder in
            PushChildChannel(
                responder: responder,
                push: push,
                idleTimeout: idle,
                limiter: limiter,
                additionalHandlers: { [ReadTimeoutHandler(timeout: read)] }
            )
        }
    }

    private static func removeNewDatabase(_ path: String?) {
        guard let path else { return }
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }
}

extension CountersignServer {
    /// `countersign admin unlock`: clears the username's lockout state. Throws when no such account exists.
    public static func unlock(
        username raw: String,
        database location: DatabaseLocation,
        logger: Logger
    ) async throws -> String {
        let store = try await ServerDatabase.open(location, logger: logger)
        do {
            let username = (try? Username(parsing: raw))?.text ?? raw.lowercased()
            guard try await store.account(username: username) != nil else {
                throw ConfigurationError("no account named \(username) in \(location)")
            }
            let had = try await store.unlock(username: username)
            await store.close()
            return had ? "unlocked \(username): failed sign-ins cleared" : "\(username) had no failed sign-ins or lock"
        } catch {
            await store.close()
            throw error
        }
    }
}

extension CountersignServer {
    /// `countersign admin messages`: what the server holds, as the seed's Man-in-the-Middle screen showed
    /// it: `alice => bob  <accepted>  <size>  <first bytes of the envelope>`. Ciphertext only: the
    /// server has no key that opens any of it.
    public static func messageLines(
        database location: DatabaseLocation,
        limit: Int,
        logger: Logger
    ) async throws -> [String] {
        let storage = try await ServerDatabase.open(location, logger: logger)
        do {
            let messages = try await storage.allMessages(limit: limit)
            await storage.close()
            let iso = ISO8601DateFormatter()
            return messages.map { m in
                let state =
                    m.cancelled
                    ? "  (cancelled)"
                    : m.deliverAt > m.acceptedAt ? "  (deliver at \(iso.string(from: m.deliverAt)))" : ""
                // The first bytes of the AES-GCM body: what a reader of the database would find instead of the text.
                let head =
                    (try? MessageEnvelope(bytes: m.envelope)).map { Array($0.body.prefix(24)) }
                    ?? Array(m.envelope.prefix(24))
                return
                    "\(m.senderUsername) => \(m.recipients.joined(separator: ", "))  \(iso.string(from: m.acceptedAt))  \(m.envelope.count) bytes  "
                    + Hex.encode(head) + "…" + state
            }
        } catch {
            await storage.close()
            throw error
        }
    }
}

/// Every 10 minutes deletes what has expired: sessions, spent captchas, old audit rows of unknown
/// usernames, device challenges and sessions, undelivered queue entries and messages past retention,
/// pairing keys, MFA challenges, transactions and authentication codes (a day after expiry),
/// authenticator logs (30 days) and push tickets.
struct PurgeService: Service, CustomStringConvertible {
    let storage: any ServerStorage
    let clock: any WallClock
    let config: ServerConfiguration
    let logger: Logger

    /// ServiceLifecycle logs it: the name alone.
    var description: String { "PurgeService" }

    func purge() async throws {
        let now = clock.now()
        try await storage.purgeExpired(now: now, idle: config.sessionIdle)
        try await storage.purgeIdleBindings(
            now: now,
            idle: config.bindingIdle,
            idleWithoutDevice: config.bindingIdleWithoutDevice
        )
        try await storage.purgeExpiredDevices(now: now, idle: config.deviceSessionIdle)
        try await storage.purgeExpiredMessages(now: now)
        try await storage.purgeExpiredMFA(now: now)
        try await storage.purgeExpiredCeremonies(now: now)
        try await storage.purgeExpiredTickets(now: now)
        try await storage.purgeOIDC(now: now)
        try await storage.purgeOIDCSigningKeys(now: now)
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: .seconds(600))
                    try await purge()
                } catch is CancellationError {
                    return
                } catch {
                    logger.warning("purge failed", metadata: ["error": "\(type(of: error))"])
                }
            }
        }
    }
}

extension CountersignServer {
    /// `countersign admin backup`: a consistent copy of a SQLite database, served or not (`SQLiteBackup`);
    /// returns what was copied. PostgreSQL has its own tool, and the error says which.
    public static func backup(database location: DatabaseLocation, to target: String) throws -> String {
        switch location {
        case .sqlite(let path):
            let s = try SQLiteBackup.copy(from: path, to: target)
            return
                "backed up \(path) to \(target): \(s.bytes) bytes, \(s.accounts) accounts, \(s.devices) devices, \(s.queuedMessages) queued deliveries"
        case .postgres:
            throw ConfigurationError(
                "admin backup copies SQLite databases; for PostgreSQL use its own tool: pg_dump --format=custom --file=FILE 'URL' (docs/SERVER.md, BACKUP AND RESTORE)"
            )
        }
    }
}
