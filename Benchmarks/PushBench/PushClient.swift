import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization

/// What every connection reports, from whichever event loop it runs on.
final class Recorder: Sendable {
    struct State {
        /// Message ID → index of the timed send (set before the timed phase).
        var indexOf: [String: Int] = [:]
        var target: [Int32] = []
        var sentAt: [UInt64] = []
        var answeredAt: [UInt64] = []
        var status: [Int16] = []
        var receivedAt: [UInt64] = []
        var answered = 0
        var duplicates = 0
        var wrongDevice = 0
        /// Message frames that are not timed sends (the connect phase's queues are empty: none expected).
        var other = 0
        /// Connections that ended after queueEmpty, by the server's close code (0: no close frame).
        var dropped: [UInt16: Int] = [:]
    }
    let state = Mutex(State())

    func prepare(ids: [String], targets: [Int]) {
        state.withLock { s in
            s.indexOf = Dictionary(uniqueKeysWithValues: ids.enumerated().map { ($1, $0) })
            s.target = targets.map { Int32($0) }
            s.sentAt = Array(repeating: 0, count: ids.count)
            s.answeredAt = Array(repeating: 0, count: ids.count)
            s.status = Array(repeating: 0, count: ids.count)
            s.receivedAt = Array(repeating: 0, count: ids.count)
        }
    }

    func received(id: String, device: Int, at t: UInt64) {
        state.withLock { s in
            guard let i = s.indexOf[id] else {
                s.other += 1
                return
            }
            guard s.target[i] == device else {
                s.wrongDevice += 1
                return
            }
            if s.receivedAt[i] != 0 { s.duplicates += 1 } else { s.receivedAt[i] = t }
        }
    }

    func sent(_ i: Int, at t: UInt64) { state.withLock { $0.sentAt[i] = t } }

    func answered(_ i: Int, status: Int, at t: UInt64) {
        state.withLock { s in
            s.status[i] = Int16(clamping: status)
            s.answeredAt[i] = t
            s.answered += 1
        }
    }

    func dropped(code: UInt16) { state.withLock { $0.dropped[code, default: 0] += 1 } }
}

@inline(__always) func now() -> UInt64 { NIODeadline.now().uptimeNanoseconds }

struct PushFailure: Error, CustomStringConvertible {
    let description: String
}

/// The frames the generator reads: only what it needs of them.
private struct Incoming: Decodable {
    struct Message: Decodable { var id: String }
    var type: String
    var seq: Int64?
    var message: Message?
    var jwt: String?
}

/// One device's push connection after the upgrade: hello, then ready, then queueEmpty (which completes
/// `ready`), then message frames, each acknowledged at once. Answers pings.
final class PushClientHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    let device: Int
    let ticket: String
    let recorder: Recorder
    let ready: EventLoopPromise<Void>
    /// bench-mfa: each `mfaChallenge` frame's token, with the time it was read.
    let onChallenge: (@Sendable (String, UInt64) -> Void)?
    private var phase = 0  // 0 hello sent, 1 ready, 2 queueEmpty
    private var closeCode: UInt16?
    private var partial: ByteBuffer?
    private var context: ChannelHandlerContext?

    init(
        device: Int,
        ticket: String,
        recorder: Recorder,
        ready: EventLoopPromise<Void>,
        onChallenge: (@Sendable (String, UInt64) -> Void)?
    ) {
        self.device = device
        self.ticket = ticket
        self.recorder = recorder
        self.ready = ready
        self.onChallenge = onChallenge
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    private func send(text: String, context: ChannelHandlerContext) {
        let buffer = context.channel.allocator.buffer(string: text)
        context.writeAndFlush(
            wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: buffer)),
            promise: nil
        )
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            if frame.fin { received(frame.unmaskedData, context: context) } else { partial = frame.unmaskedData }
        case .continuation:
            var data = frame.unmaskedData
            partial?.writeBuffer(&data)
            if frame.fin, let whole = partial {
                partial = nil
                received(whole, context: context)
            }
        case .ping:
            context.writeAndFlush(
                wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)),
                promise: nil
            )
        case .connectionClose:
            var data = frame.unmaskedData
            closeCode = data.readInteger(as: UInt16.self) ?? 1005
            let body = context.channel.allocator.buffer(integer: closeCode!)
            let channel = context.channel
            context.writeAndFlush(
                wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: body))
            )
            .whenComplete { _ in channel.close(promise: nil) }
        default:
            break
        }
    }

    private func received(_ buffer: ByteBuffer, context: ChannelHandlerContext) {
        let t = now()
        guard let frame = try? JSONDecoder().decode(Incoming.self, from: Data(buffer.readableBytesView)) else { return }
        switch frame.type {
        case "message":
            guard let seq = frame.seq, let id = frame.message?.id else { return }
            recorder.received(id: id, device: device, at: t)
            send(text: #"{"type":"ack","seqs":[\#(seq)]}"#, context: context)
        case "mfaChallenge":
            if let jwt = frame.jwt { onChallenge?(jwt, t) }
        case "ready":
            phase = 1
        case "queueEmpty":
            if phase < 2 {
                phase = 2
                ready.succeed()
            }
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if phase < 2 {
            ready.fail(
                PushFailure(
                    description: closeCode.map { "closed by the server with \($0)" }
                        ?? "connection closed before queueEmpty"
                )
            )
        } else {
            recorder.dropped(code: closeCode ?? 0)
        }
        phase = 3
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

enum PushClient {
    /// Opens a WebSocket to /v1/push, says hello with `ticket`, and returns the channel once the server
    /// has sent `ready` and `queueEmpty`; fails (and closes) on anything else or after `timeout`.
    static func connect(
        device: Int,
        ticket: String,
        host: String,
        port: Int,
        loop: any EventLoop,
        recorder: Recorder,
        timeout: TimeAmount = .seconds(20),
        onChallenge: (@Sendable (String, UInt64) -> Void)? = nil
    ) async throws -> any Channel {
        let ready = loop.makePromise(of: Void.self)
        let hostHeader = "\(host):\(port)"
        let (channel, upgraded): (any Channel, EventLoopFuture<Bool>)
        do {
            (channel, upgraded) = try await ClientBootstrap(group: loop)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .connectTimeout(.seconds(10))
                .connect(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let upgrader = NIOTypedWebSocketClientUpgrader<Bool>(
                            maxFrameSize: 1 << 20,
                            upgradePipelineHandler: { channel, _ in
                                channel.eventLoop.makeCompletedFuture {
                                    try channel.pipeline.syncOperations.addHandler(
                                        PushClientHandler(
                                            device: device,
                                            ticket: ticket,
                                            recorder: recorder,
                                            ready: ready,
                                            onChallenge: onChallenge
                                        )
                                    )
                                    return true
                                }
                            }
                        )
                        var headers = HTTPHeaders()
                        headers.add(name: "Host", value: hostHeader)
                        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/v1/push", headers: headers)
                        let configuration = NIOTypedHTTPClientUpgradeConfiguration<Bool>(
                            upgradeRequestHead: head,
                            upgraders: [upgrader],
                            notUpgradingCompletionHandler: { channel in channel.eventLoop.makeCompletedFuture { false }
                            }
                        )
                        let upgraded = try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(
                            configuration: .init(upgradeConfiguration: configuration)
                        )
                        return (channel, upgraded)
                    }
                }
        } catch {
            ready.fail(error)
            throw error
        }
        let deadline = loop.scheduleTask(in: timeout) {
            ready.fail(PushFailure(description: "no queueEmpty within \(timeout.nanoseconds / 1_000_000_000) s"))
            channel.close(promise: nil)
        }
        do {
            guard try await upgraded.get() else { throw PushFailure(description: "upgrade refused") }
            // Only now: the upgrade handler removes the HTTP codec after the upgraded pipeline is set up.
            let hello = ByteBuffer(string: #"{"type":"hello","ticket":"\#(ticket)"}"#)
            try await channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: hello))
            try await ready.futureResult.get()
            deadline.cancel()
            return channel
        } catch {
            deadline.cancel()
            ready.fail(error)
            channel.close(promise: nil)
            throw error
        }
    }
}
