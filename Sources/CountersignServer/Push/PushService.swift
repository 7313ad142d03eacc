import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import Logging
import Synchronization

/// The push channel's rules (docs/PROTOCOL.md §2): tickets, who a connection is, and what it may be sent.
/// Clock and randomness are injected; the NIO side (`PushSocketHandler`) only moves frames.
public final class PushService: Sendable {
    let store: any PushStore
    let sessions: SessionService
    let messages: MessageService
    let clock: any WallClock
    let random: any RandomSource
    let logger: Logger
    /// This node's connections, which the bus delivers to.
    let hub: PushHub
    /// In-process on SQLite, NOTIFY/LISTEN on PostgreSQL.
    let bus: any PushBus
    /// A device's pending MFA challenges, sent when it connects.
    let pendingChallenges: @Sendable (_ deviceID: String) async throws -> [String]
    /// A delayed message this node claimed as due (its devices' notifications).
    let cameDue: @Sendable (_ messageID: String) -> Void
    /// A device's connection here is seen (connected, or shown again) or no longer (hidden, closed): a seen
    /// device gets its events over the connection and no push notification.
    let presence: @Sendable (_ deviceID: String, _ seen: Bool) -> Void

    static let ticketLifetime: TimeInterval = 60
    /// Tickets per device: 30 a minute.
    let tickets = AddressThrottle(.init(capacity: 30, window: 60))
    static let helloTimeout: TimeInterval = 10
    public static let window = 64
    public static let pingInterval = 25
    /// A connection looks at its device session again this often, and closes when it has ended: a
    /// backstop to the signals, which a node that was down can miss.
    static let recheckInterval: TimeInterval = 300

    init(
        store: any PushStore,
        sessions: SessionService,
        messages: MessageService,
        clock: any WallClock,
        random: any RandomSource,
        logger: Logger,
        hub: PushHub,
        bus: any PushBus,
        pendingChallenges: @escaping @Sendable (_ deviceID: String) async throws -> [String],
        cameDue: @escaping @Sendable (_ messageID: String) -> Void = { _ in },
        presence: @escaping @Sendable (_ deviceID: String, _ seen: Bool) -> Void = { _, _ in }
    ) {
        self.store = store
        self.sessions = sessions
        self.messages = messages
        self.clock = clock
        self.random = random
        self.logger = logger
        self.hub = hub
        self.bus = bus
        self.pendingChallenges = pendingChallenges
        self.cameDue = cameDue
        self.presence = presence
    }

    public func ticket(_ auth: DeviceAuthenticated) async throws -> PushTicket {
        // A reconnecting client needs one every few seconds at most; each is a row until it is used or purged.
        if let wait = tickets.take("device " + auth.device.id, now: clock.now()) {
            throw RequestError.rateLimited(retryAfter: wait)
        }
        let bytes = random.bytes(32)
        let ticket = "cst_" + Base64URL(bytes).description
        let expires = clock.now().addingTimeInterval(Self.ticketLifetime)
        try await store.createTicket(
            hash: TokenHash.hex(ticket),
            deviceID: auth.device.id,
            sessionHash: auth.session.tokenHash,
            expiresAt: expires
        )
        return PushTicket(ticket: ticket, expiresAt: expires)
    }

    /// The device behind a `hello`'s ticket, or nil: unknown, used, expired, or its session has ended.
    func redeem(ticket: String) async -> DeviceAuthenticated? {
        guard ticket.hasPrefix("cst_"), ticket.utf8.count <= 64 else { return nil }
        do {
            guard let session = try await store.spendTicket(hash: TokenHash.hex(ticket), now: clock.now())
            else { return nil }
            return try await sessions.authenticate(deviceSessionHash: session)
        } catch {
            return nil
        }
    }

    /// Whether the connection's device session is still valid (the periodic backstop).
    func stillValid(sessionHash: String) async -> Bool {
        do {
            _ = try await sessions.authenticate(deviceSessionHash: sessionHash)
            return true
        } catch SessionError.noDeviceSession {
            return false
        } catch {
            return true  // a database hiccup is not a revocation
        }
    }

    /// Due entries not in `excluding` (those sent and not yet acknowledged), oldest first, at most
    /// `limit` and about 1 MiB (a window of large messages must not sit in memory at once); `complete`
    /// when nothing more is due now. Always from the start of the queue: a delayed message comes due
    /// with a position below entries already sent, and on PostgreSQL positions can commit out of order.
    func entries(
        deviceID: String,
        excluding: Set<Int64>,
        limit: Int
    ) async throws -> (messages: [QueuedMessage], complete: Bool) {
        let page = try await messages.page(
            deviceID: deviceID,
            after: 0,
            excluding: Array(excluding),
            limit: limit,
            maxBytes: 1 << 20,
            recordFetch: false
        )
        return (page.messages, page.next == nil)
    }

    func acknowledge(deviceID: String, seqs: [Int64]) async throws {
        try await messages.acknowledge(deviceID: deviceID, seqs: seqs)
    }

    /// Announces delayed messages that came due: claimed once across all nodes, then signalled.
    func fireDue() async throws -> Int {
        var total = 0
        while true {
            let (claimed, accounts) = try await store.claimDue(now: clock.now(), limit: 500)
            total += claimed.count
            if !accounts.isEmpty { bus.publish(.due(accounts: accounts)) }
            // Claimed here, so told from here: one notification per message whatever the number of nodes.
            for id in claimed { cameDue(id) }
            if claimed.count < 500 { break }
        }
        if total > 0 { hub.metrics.dueFired.increment(by: Int64(total)) }
        return total
    }
}
