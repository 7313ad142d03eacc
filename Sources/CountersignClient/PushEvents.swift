import CountersignAPI
import Foundation
import Logging
import NIOCore
import Synchronization
import WSClient

/// What the push channel delivers to the app (docs/PROTOCOL.md §2).
public enum PushEvent: Sendable, Equatable {
    /// One queue entry. It is acknowledged when the app asks for the next event, so store it first.
    case message(QueuedMessage)
    /// Everything that was due when the connection opened has been delivered.
    case caughtUp
    /// An authenticator's signed push challenge (docs/PROTOCOL.md §3); `CountersignAuthenticator` checks it.
    case challenge(jwt: String)
}

/// How the connection is doing, for a status line; never needed for correctness.
public enum PushStatus: Sendable, Equatable {
    case connecting
    case connected
    /// Lost; the next attempt is in `retryIn` seconds.
    case disconnected(reason: String, retryIn: Double)
}

/// The push channel as an `AsyncSequence` of events that reconnects (exponential backoff with full
/// jitter), resumes (the server resends whatever was not acknowledged) and acknowledges: an event is
/// acknowledged when the consumer asks for the next one, so a crash between receiving and storing
/// costs a redelivery, never a loss. Duplicates (redelivered after a lost acknowledgement) are dropped
/// by message ID. It ends by throwing `ClientError.pushEnded` when the device is revoked or connected
/// elsewhere, and the device session's errors when it cannot get a ticket. With `renewSession`, a channel
/// closed because the device's session ended (4403 after a password change or a sign-out everywhere) is
/// renewed and reopened; it ends only when the renewal fails (a revoked device), with the renewal's error.
public struct PushEvents: AsyncSequence, Sendable {
    public typealias Element = PushEvent
    let client: CountersignClient
    let renewSession: (@Sendable () async throws -> Void)?
    let onStatus: @Sendable (PushStatus) -> Void
    let backoff: ClosedRange<Double>
    let visibility: PushVisibility?

    public func makeAsyncIterator() -> Iterator { Iterator(self) }

    public final class Iterator: AsyncIteratorProtocol {
        let stream: AsyncThrowingStream<PushEvent, any Error>
        var iterator: AsyncThrowingStream<PushEvent, any Error>.AsyncIterator
        let link: PushLink
        let task: Task<Void, Never>
        var pendingAck: QueuedMessage?

        init(_ events: PushEvents) {
            let (stream, continuation) = AsyncThrowingStream<PushEvent, any Error>.makeStream()
            self.stream = stream
            iterator = stream.makeAsyncIterator()
            let link = PushLink()
            self.link = link
            task = Task { await PushLink.run(events, link: link, output: continuation) }
            continuation.onTermination = { [task] _ in task.cancel() }
        }

        deinit { task.cancel() }

        public func next() async throws -> PushEvent? {
            if let done = pendingAck {
                pendingAck = nil
                link.consumed(done)
            }
            let event = try await iterator.next()
            if case .message(let m) = event { pendingAck = m }
            return event
        }
    }
}

extension CountersignClient {
    /// A single-use ticket for the push channel's first frame (needs a device session).
    public func pushTicket() async throws -> PushTicket {
        try await send("POST", "/v1/devices/current/push-tickets", as: PushTicket.self, credential: .device)
    }

    /// This device's push channel. `renewSession` is called when the device session has ended (expired,
    /// idle, or ended by a password change or a sign-out everywhere), to open a new one; an error it throws
    /// ends the sequence, except failures to reach the server, which are retried. Without it an ended
    /// session ends the sequence with the server's error.
    ///
    /// `visibility`: an app whose connection may stay open while no one sees it (in the background) says so
    /// through it, and the server then sends its push notifications (APNs, Web Push) again; without it the
    /// connection counts as seen, and the device gets its events over it alone (docs/PROTOCOL.md §2.2).
    public func events(
        renewSession: (@Sendable () async throws -> Void)? = nil,
        backoff: ClosedRange<Double> = 0.5...30,
        visibility: PushVisibility? = nil,
        onStatus: @escaping @Sendable (PushStatus) -> Void = { _ in }
    ) -> PushEvents {
        PushEvents(
            client: self,
            renewSession: renewSession,
            onStatus: onStatus,
            backoff: backoff,
            visibility: visibility
        )
    }

    /// The WebSocket URL of the push channel: the server's URL with ws/wss.
    var pushURL: String {
        var c = URLComponents(url: server, resolvingAgainstBaseURL: false) ?? URLComponents()
        c.scheme = server.scheme == "https" ? "wss" : "ws"
        c.path = "/v1/push"
        c.query = nil
        // No user:password@ in a WebSocket URL: its parser ends the host at the first ':', so the push channel
        // (and its ticket) would go to the user part's "host" while the HTTP calls go to the real one.
        c.user = nil
        c.password = nil
        return c.string ?? "ws://localhost/v1/push"
    }
}

/// Whether someone sees the app that holds a push channel (`events(visibility:)`): set it to false when the app
/// goes to the background with its connection still open, and to true when it comes back. The live connection
/// is told at once, and each new one on its `ready`.
public final class PushVisibility: Sendable {
    private struct State {
        var visible: Bool
        var listeners: [UInt64: @Sendable (Bool) -> Void] = [:]
        var next: UInt64 = 0
    }
    private let state: Mutex<State>

    public init(visible: Bool = true) { state = Mutex(State(visible: visible)) }

    public var isVisible: Bool { state.withLock { $0.visible } }

    /// Each connection listening is told under the lock, so that two changes at once reach it in their order.
    public func set(_ visible: Bool) {
        state.withLock { s in
            guard s.visible != visible else { return }
            s.visible = visible
            for listener in s.listeners.values { listener(visible) }
        }
    }

    /// A connection listens from its `ready`: told now when no one sees the app (a connection counts as seen until
    /// it says otherwise), then of each change. Returns the token that `stopListening` takes.
    func listen(_ listener: @escaping @Sendable (Bool) -> Void) -> UInt64 {
        state.withLock { s in
            s.next += 1
            s.listeners[s.next] = listener
            if !s.visible { listener(false) }
            return s.next
        }
    }

    func stopListening(_ token: UInt64) { state.withLock { _ = $0.listeners.removeValue(forKey: token) } }
}

/// Between the consumer and the connection of the moment: acknowledgements go to the live connection
/// (or are dropped when there is none: the server resends, and the ID is then known to be done).
final class PushLink: Sendable {
    private struct State {
        var acks: AsyncStream<PushFrame>.Continuation?
        /// Handed to the consumer and not yet acknowledged by it: a resend is ignored.
        var handedOut: [String: Int64] = [:]
        /// Consumed: a resend is acknowledged at once and not handed out again. Bounded.
        var done: Set<String> = []
        var doneOrder: [String] = []
    }
    private let state = Mutex(State())
    static let rememberDone = 10_000

    func consumed(_ m: QueuedMessage) {
        let acks = state.withLock { s -> AsyncStream<PushFrame>.Continuation? in
            s.handedOut[m.id] = nil
            if s.done.insert(m.id).inserted {
                s.doneOrder.append(m.id)
                if s.doneOrder.count > Self.rememberDone { s.done.remove(s.doneOrder.removeFirst()) }
            }
            return s.acks
        }
        acks?.yield(.ack(seqs: [m.seq]))
    }

    enum Arrival { case new, ackNow, ignore }

    func arrived(_ m: QueuedMessage) -> Arrival {
        state.withLock { s in
            if s.done.contains(m.id) { return .ackNow }
            if s.handedOut[m.id] != nil { return .ignore }
            s.handedOut[m.id] = m.seq
            return .new
        }
    }

    func attach(_ acks: AsyncStream<PushFrame>.Continuation?) { state.withLock { $0.acks = acks } }

    /// The connection loop: ticket, connect, hello, read; on loss, back off and again.
    static func run(
        _ events: PushEvents,
        link: PushLink,
        output: AsyncThrowingStream<PushEvent, any Error>.Continuation
    ) async {
        let client = events.client
        var failures = 0
        var logger = Logger(label: "countersign.push")
        logger.logLevel = .critical
        while !Task.isCancelled {
            events.onStatus(.connecting)
            var reason = "connection lost"
            do {
                let ticket: PushTicket
                do {
                    ticket = try await client.pushTicket()
                } catch let e as ClientError
                    where (e.code == .unauthenticated || e == .noDeviceSession) && events.renewSession != nil
                {
                    try await renew(events)
                    ticket = try await client.pushTicket()
                }
                let hello = String(
                    decoding: try APICoding.encoder().encode(PushFrame.hello(ticket: ticket.ticket)),
                    as: UTF8.self
                )
                let ready = Flag()
                let configuration = WebSocketClientConfiguration(
                    maxFrameSize: 4 << 20,
                    autoPing: .enabled(timePeriod: .seconds(30))
                )
                // Through the proxy the environment names, as the HTTP calls (HTTPTransport).
                let socket = WebSocketClient(
                    url: client.pushURL,
                    configuration: configuration,
                    proxySettings: .environment(),
                    logger: logger
                ) { inbound, outbound, _ in
                    try await outbound.write(.text(hello))
                    // What this side sends after hello: acknowledgements, and visibility once ready.
                    let (frames, ackContinuation) = AsyncStream<PushFrame>.makeStream()
                    link.attach(ackContinuation)
                    let listening = ListeningToken()
                    defer {
                        link.attach(nil)
                        if let token = listening.value.withLock({ $0 }) { events.visibility?.stopListening(token) }
                        ackContinuation.finish()
                    }
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await frame in frames {
                                let text = String(decoding: try APICoding.encoder().encode(frame), as: UTF8.self)
                                try await outbound.write(.text(text))
                            }
                        }
                        group.addTask {
                            for try await message in inbound.messages(maxSize: 4 << 20) {
                                guard case .text(let text) = message,
                                    let frame = try? APICoding.decoder().decode(PushFrame.self, from: Data(text.utf8))
                                else { continue }
                                switch frame {
                                case .ready:
                                    ready.set()
                                    if let visibility = events.visibility {
                                        let token = visibility.listen { visible in
                                            ackContinuation.yield(.visibility(visible: visible))
                                        }
                                        listening.value.withLock { $0 = token }
                                    }
                                    events.onStatus(.connected)
                                case .message(let seq, let m):
                                    switch link.arrived(m) {
                                    case .new: output.yield(.message(m))
                                    case .ackNow: ackContinuation.yield(.ack(seqs: [seq]))
                                    case .ignore: break
                                    }
                                case .queueEmpty:
                                    output.yield(.caughtUp)
                                case .mfaChallenge(let jwt):
                                    output.yield(.challenge(jwt: jwt))
                                default:
                                    break
                                }
                            }
                        }
                        try await group.next()
                        group.cancelAll()
                    }
                }
                let close = try await socket.run()
                if ready.isSet { failures = 0 }
                if let code = close?.closeCode, case .unknown(let n) = code {
                    if n == PushCloseCode.revoked.rawValue, events.renewSession != nil {
                        // 4403 also closes the channel of a device whose session ended (a password change, a
                        // sign-out everywhere): a device that can still sign a nonce opens a new session and
                        // carries on (at once if the channel had opened, else after the backoff); a revoked
                        // one is told so by the server there, which ends the sequence.
                        try await renew(events)
                        reason = "the device session ended; opened a new one"
                        if ready.isSet {
                            events.onStatus(.disconnected(reason: reason, retryIn: 0))
                            continue
                        }
                    } else if n == PushCloseCode.revoked.rawValue || n == PushCloseCode.replaced.rawValue {
                        output.finish(throwing: ClientError.pushEnded(PushCloseCode(rawValue: n)!))
                        return
                    } else {
                        reason = "closed by the server (\(n))"
                    }
                } else if let code = close?.closeCode {
                    reason = "closed by the server (\(code))"
                }
            } catch let e as ClientError
                where e.code == .unauthenticated || e.code == .deviceRevoked || e == .noDeviceSession
            {
                output.finish(throwing: e)
                return
            } catch let e as RenewalFailed {
                output.finish(throwing: e.error)
                return
            } catch is CancellationError {
                break
            } catch {
                reason = "\(error)"
            }
            if Task.isCancelled { break }
            failures += 1
            // Full jitter (AWS architecture blog, "Exponential Backoff And Jitter"): spreads a whole
            // fleet's reconnects after a server restart instead of synchronising them.
            let ceiling = min(
                events.backoff.upperBound,
                events.backoff.lowerBound * pow(2, Double(min(failures - 1, 16)))
            )
            let wait = Double.random(in: events.backoff.lowerBound...max(events.backoff.lowerBound, ceiling))
            events.onStatus(.disconnected(reason: reason, retryIn: wait))
            try? await Task.sleep(for: .seconds(wait))
        }
        output.finish()
    }
}

extension PushLink {
    /// A renewal that failed for any reason but reaching the server (the device was revoked, its key cannot
    /// be unlocked…) ends the sequence with that error; retrying could not mend it.
    struct RenewalFailed: Error { let error: any Error }

    static func renew(_ events: PushEvents) async throws {
        guard let renewSession = events.renewSession else { return }
        do {
            try await renewSession()
        } catch let e as ClientError where e.isTransient {
            throw e
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw RenewalFailed(error: error)
        }
    }
}

/// The connection's place among a PushVisibility's listeners, given back when it closes.
final class ListeningToken: Sendable {
    let value = Mutex<UInt64?>(nil)
}

final class Flag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
