import CountersignAPI
import Foundation
import Logging
import NIOCore
import NIOWebSocket

/// One push connection after the WebSocket upgrade (docs/PROTOCOL.md §2), as a plain channel handler: no
/// task, no async stream per connection, so an idle connection costs only its channel, this object and a
/// timer. Everything here runs on the channel's event loop; database work runs in tasks whose results
/// hop back to it.
final class PushSocketHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private enum Phase { case awaitingHello, authenticating, open, closed }

    let service: PushService
    private var context: ChannelHandlerContext?
    private var phase = Phase.awaitingHello
    private(set) var connection: PushConnection?
    /// Whether the client says someone sees it (`visibility`; true from the start).
    private var seen = false
    /// A text message arriving in fragments.
    private var partial: ByteBuffer?
    /// Sent and not yet acknowledged (at most `PushService.window`).
    private var inflight = Set<Int64>()
    private var fetching = false
    private var lookAgain = false
    private var announcedEmpty = false
    private var lastHeard = NIODeadline.now()
    private var lastCheck = NIODeadline.now()
    private var helloTimer: Scheduled<Void>?
    private var pinger: RepeatedTask?
    /// MFA challenges already sent on this connection (they are not acknowledged; they expire).
    private var sentChallenges = Set<String>()
    /// Acknowledgements received and not yet written: merged while one write is in flight, so that a
    /// flood of `ack` frames costs one write at a time on the shared writer, not one each.
    private var acksPending = Set<Int64>()
    private var acking = false
    /// The authenticated device, kept past the close for the acknowledgements still to write.
    private var ackingDevice: String?
    /// The most sequence numbers waiting to be written: a client acknowledges what it was sent, at most
    /// a window at a time; more is a protocol error.
    static let maxPendingAcks = 2 * PushService.window

    /// The connection's place under the per-address cap, given back once it authenticates.
    private let slot: ConnectionLimiter.Slot?

    init(service: PushService, slot: ConnectionLimiter.Slot? = nil) {
        self.service = service
        self.slot = slot
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let me = NIOLoopBound(self, eventLoop: context.eventLoop)
        helloTimer = context.eventLoop.scheduleTask(in: .seconds(Int64(PushService.helloTimeout))) {
            if me.value.phase == .awaitingHello || me.value.phase == .authenticating {
                me.value.close(.unauthenticated)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Frame decoding errors (oversized, bad masking) and resets: the connection is over.
        if error is NIOWebSocketError { close(.protocolError) } else { context.close(promise: nil) }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { pump() }
        context.fireChannelWritabilityChanged()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        lastHeard = .now()
        switch frame.opcode {
        case .connectionClose:
            // The peer is closing: answer with its code, as RFC 6455 §5.5.1 asks, and end.
            guard phase != .closed else {
                context.close(promise: nil)
                return
            }
            phase = .closed
            var data = frame.unmaskedData
            let code = data.readWebSocketErrorCode() ?? .normalClosure
            var body = context.channel.allocator.buffer(capacity: 2)
            body.write(webSocketErrorCode: code)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: body)))
                .whenComplete { _ in
                    channel.close(promise: nil)
                }
            finish()
        case .ping:
            guard frame.fin else {
                close(.protocolError)
                return
            }
            context.writeAndFlush(
                wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)),
                promise: nil
            )
        case .pong:
            break
        case .text where partial == nil:
            if frame.fin { received(frame.unmaskedData) } else { partial = frame.unmaskedData }
        case .continuation where partial != nil:
            var data = frame.unmaskedData
            partial!.writeBuffer(&data)
            guard partial!.readableBytes <= PushFrame.maxClientFrame else {
                close(.protocolError)
                return
            }
            if frame.fin, let whole = partial {
                partial = nil
                received(whole)
            }
        default:
            close(.protocolError)
        }
    }

    private func received(_ buffer: ByteBuffer) {
        guard buffer.readableBytes <= PushFrame.maxClientFrame,
            let frame = try? APICoding.decoder().decode(PushFrame.self, from: Data(buffer.readableBytesView))
        else {
            close(phase == .awaitingHello ? .unauthenticated : .protocolError)
            return
        }
        switch (phase, frame) {
        case (.awaitingHello, .hello(let ticket)):
            phase = .authenticating
            let loop = context!.eventLoop
            let me = NIOLoopBound(self, eventLoop: loop)
            let service = self.service
            Task {
                let auth = await service.redeem(ticket: ticket)
                loop.execute { me.value.authenticated(auth) }
            }
        case (.awaitingHello, _):
            close(.unauthenticated)
        case (.open, .ack(let seqs)):
            guard seqs.count <= PushService.window else {
                close(.protocolError)
                return
            }
            acksPending.formUnion(seqs)
            guard acksPending.count <= Self.maxPendingAcks else {
                close(.protocolError)
                return
            }
            writeAcks()
        case (.open, .visibility(let visible)):
            // A connection replaced (its close on its way) says nothing more of its device.
            guard let connection, visible != seen, service.hub.holds(connection) else { return }
            seen = visible
            service.presence(connection.deviceID, visible)
        case (.open, .unknown), (.authenticating, .unknown):
            break  // a client newer than this server: ignored, as PROTOCOL §2 says
        case (.closed, _):
            break
        default:
            close(.protocolError)
        }
    }

    /// Writes the pending acknowledgements, one write in flight per connection; also once the connection
    /// has closed: what the device acknowledged while authenticated stays acknowledged, rather than being
    /// handed out again on its next connection.
    private func writeAcks() {
        guard phase == .open || phase == .closed, !acking, !acksPending.isEmpty, let context,
            let deviceID = ackingDevice
        else { return }
        acking = true
        let seqs = Array(acksPending)
        acksPending.removeAll(keepingCapacity: true)
        let loop = context.eventLoop
        let me = NIOLoopBound(self, eventLoop: loop)
        let service = self.service
        Task {
            do {
                try await service.acknowledge(deviceID: deviceID, seqs: seqs)
                loop.execute { me.value.acked(seqs) }
            } catch {
                // Not deleted: they stay in flight here and come again on the next connection.
                service.logger.warning("push ack failed", metadata: ["error": "\(String(reflecting: type(of: error)))"])
                loop.execute { me.value.acked([]) }
            }
        }
    }

    private func acked(_ seqs: [Int64]) {
        acking = false
        inflight.subtract(seqs)
        service.hub.metrics.ackWrites.increment()
        pump()
        writeAcks()
    }

    private func authenticated(_ auth: DeviceAuthenticated?) {
        guard phase == .authenticating, let context else { return }
        helloTimer?.cancel()
        guard let auth else {
            close(.unauthenticated)
            return
        }
        ackingDevice = auth.device.id
        let c = PushConnection(
            handler: self,
            eventLoop: context.eventLoop,
            device: auth.device.id,
            account: auth.account.id,
            session: auth.session.tokenHash
        )
        guard service.hub.attach(c) else {
            close(.goingAway)
            return
        }
        connection = c
        phase = .open
        slot?.release()
        service.bus.publish(.connected(deviceID: c.deviceID, connectionID: c.id))
        seen = true
        service.presence(c.deviceID, true)
        write(.ready(deviceId: auth.device.id, window: PushService.window, pingInterval: PushService.pingInterval))
        context.flush()
        let interval = TimeAmount.seconds(Int64(PushService.pingInterval))
        let me = NIOLoopBound(self, eventLoop: context.eventLoop)
        pinger = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in me.value.tick()
        }
        pump()
        sendChallenges()
    }

    /// Every ping interval: close a silent peer, ping a live one, and now and then look at the session.
    private func tick() {
        guard phase == .open, let context, let connection else { return }
        let now = NIODeadline.now()
        guard now - lastHeard < .seconds(Int64(3 * PushService.pingInterval)) else {
            close(.timedOut)
            return
        }
        context.writeAndFlush(
            wrapOutboundOut(
                WebSocketFrame(fin: true, opcode: .ping, data: context.channel.allocator.buffer(capacity: 0))
            ),
            promise: nil
        )
        guard now - lastCheck >= .seconds(Int64(PushService.recheckInterval)) else { return }
        lastCheck = now
        let loop = context.eventLoop
        let me = NIOLoopBound(self, eventLoop: loop)
        let service = self.service
        Task {
            if await !service.stillValid(sessionHash: connection.sessionHash) {
                loop.execute { me.value.close(.revoked) }
            }
        }
    }

    /// Sends what is due and not in flight, as far as the window and the socket allow. A wake-up during
    /// a fetch is remembered and looked at when the fetch returns, so none is lost.
    func pump() {
        guard phase == .open, let context, let connection else { return }
        guard !fetching else {
            lookAgain = true
            return
        }
        let room = PushService.window - inflight.count
        guard room > 0, context.channel.isWritable else { return }
        fetching = true
        lookAgain = false
        let loop = context.eventLoop
        let me = NIOLoopBound(self, eventLoop: loop)
        let service = self.service
        let excluding = inflight
        Task {
            let result: Result<(messages: [QueuedMessage], complete: Bool), any Error>
            do {
                result = .success(
                    try await service.entries(deviceID: connection.deviceID, excluding: excluding, limit: room)
                )
            } catch {
                result = .failure(error)
            }
            loop.execute { me.value.fetched(result) }
        }
    }

    private func fetched(_ result: Result<(messages: [QueuedMessage], complete: Bool), any Error>) {
        fetching = false
        guard phase == .open, let context else { return }
        switch result {
        case .failure(let error):
            service.logger.warning("push fetch failed", metadata: ["error": "\(String(reflecting: type(of: error)))"])
            let me = NIOLoopBound(self, eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: .seconds(1)) { me.value.pump() }
        case .success(let (messages, complete)):
            var sent = 0
            for m in messages where !inflight.contains(m.seq) {
                write(.message(seq: m.seq, message: m))
                inflight.insert(m.seq)
                sent += 1
            }
            if complete, !announcedEmpty {
                announcedEmpty = true
                write(.queueEmpty)
            }
            context.flush()
            if sent > 0 { service.hub.metrics.delivered.increment(by: Int64(sent)) }
            if !complete || lookAgain { pump() }
        }
    }

    /// Sends the device's pending MFA challenges that this connection has not sent yet.
    func sendChallenges() {
        guard phase == .open, let context, let connection else { return }
        let loop = context.eventLoop
        let me = NIOLoopBound(self, eventLoop: loop)
        let service = self.service
        Task {
            guard let jwts = try? await service.pendingChallenges(connection.deviceID), !jwts.isEmpty else {
                return
            }
            loop.execute {
                let handler = me.value
                guard handler.phase == .open else { return }
                for jwt in jwts where handler.sentChallenges.insert(jwt).inserted {
                    handler.write(.mfaChallenge(jwt: jwt))
                }
                handler.context?.flush()
            }
        }
    }

    private func write(_ frame: PushFrame) {
        guard let context, let bytes = try? APICoding.encoder().encode(frame) else { return }
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: buffer)), promise: nil)
    }

    /// Sends a close frame with `code` and closes the connection once it is written.
    func close(_ code: PushCloseCode) {
        guard phase != .closed, let context else { return }
        phase = .closed
        var body = context.channel.allocator.buffer(capacity: 2)
        body.write(
            webSocketErrorCode: code.rawValue < 4000
                ? WebSocketErrorCode(codeNumber: Int(code.rawValue)) : .unknown(code.rawValue)
        )
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: body)))
            .whenComplete { _ in
                channel.close(promise: nil)
            }
        finish()
    }

    private func finish() {
        phase = .closed
        helloTimer?.cancel()
        pinger?.cancel()
        pinger = nil
        // Replaced by a newer connection of the device here, it is the newer one's to say.
        if let connection, service.hub.detach(connection), seen { service.presence(connection.deviceID, false) }
        connection = nil
    }
}

/// What the hub holds of a connection: who it is, and two calls that hop to its event loop.
final class PushConnection: Sendable {
    let id: String
    let deviceID: String
    let accountID: String
    let sessionHash: String
    private let handler: NIOLoopBound<PushSocketHandler>

    init(handler: PushSocketHandler, eventLoop: any EventLoop, device: String, account: String, session: String) {
        id = UUID().uuidString
        deviceID = device
        accountID = account
        sessionHash = session
        self.handler = NIOLoopBound(handler, eventLoop: eventLoop)
    }

    /// Something may be due: look.
    func due() { handler.eventLoop.execute { self.handler.value.pump() } }

    /// A new MFA challenge may be waiting.
    func challenged() { handler.eventLoop.execute { self.handler.value.sendChallenges() } }

    func close(_ code: PushCloseCode) { handler.eventLoop.execute { self.handler.value.close(code) } }
}
