import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// scripts/bench-notify.sh's push service: plain HTTP/1.1 on loopback (allowed by name, as a self-hosted
/// ntfy would be), answering 201 to every POST to `/push/INDEX` and keeping, per push, the moment its last
/// byte arrived, the device index and the body. The bodies are opened after the run, so that receiving costs
/// the CPU the server shares as little as a real push service's answer would.
final class PushReceiver: Sendable {
    struct Receipt: Sendable {
        let at: UInt64
        let device: Int
        let body: [UInt8]
        let authorization: String
    }

    let receipts = Mutex<[Receipt]>([])
    let port: Int
    private let channel: any Channel

    private init(channel: any Channel, port: Int) {
        self.channel = channel
        self.port = port
    }

    static func start(group: any EventLoopGroup) async throws -> PushReceiver {
        let box = Mutex<PushReceiver?>(nil)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(
                        ReceiverHandler { receipt in box.withLock { $0 }?.receipts.withLock { $0.append(receipt) } }
                    )
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else { throw PushFailure(description: "the receiver has no port") }
        let receiver = PushReceiver(channel: channel, port: port)
        box.withLock { $0 = receiver }
        return receiver
    }

    func count() -> Int { receipts.withLock { $0.count } }

    func take() -> [Receipt] {
        receipts.withLock { r in
            defer { r.removeAll(keepingCapacity: true) }
            return r
        }
    }

    func close() async { try? await channel.close() }
}

private final class ReceiverHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let record: @Sendable (PushReceiver.Receipt) -> Void
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(record: @escaping @Sendable (PushReceiver.Receipt) -> Void) { self.record = record }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            body.removeAll(keepingCapacity: true)
        case .body(let part):
            body += part.readableBytesView
        case .end:
            let at = now()
            guard let head else { return }
            let device = head.uri.hasPrefix("/push/") ? Int(head.uri.dropFirst(6)) ?? -1 : -1
            record(
                .init(
                    at: at,
                    device: device,
                    body: body,
                    authorization: head.headers.first(name: "Authorization") ?? ""
                )
            )
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: "0")
            let status: HTTPResponseStatus = head.method == .POST && device >= 0 ? .created : .notFound
            context.write(
                wrapOutboundOut(.head(.init(version: head.version, status: status, headers: headers))),
                promise: nil
            )
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            self.head = nil
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}
