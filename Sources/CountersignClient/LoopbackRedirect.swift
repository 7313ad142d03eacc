import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A native app's redirect URI (RFC 8252 §7.3): an HTTP listener on 127.0.0.1 and a port the system chose,
/// which takes the first request to `/callback`, answers the browser with a page saying it may close the
/// tab, and hands over the query. Any other path is 404; it never follows anything it is sent.
public final class LoopbackRedirect: Sendable {
    public let port: Int
    /// `http://127.0.0.1:PORT/callback`.
    public var uri: String { "http://127.0.0.1:\(port)/callback" }
    private let channel: any Channel
    private let received: EventLoopPromise<[String: String]>

    public static func start() async throws -> LoopbackRedirect {
        let group = MultiThreadedEventLoopGroup.singleton
        let promise = group.next().makePromise(of: [String: String].self)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 8)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(Handler(received: promise))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return LoopbackRedirect(channel: channel, received: promise, port: channel.localAddress?.port ?? 0)
    }

    private init(channel: any Channel, received: EventLoopPromise<[String: String]>, port: Int) {
        self.channel = channel
        self.received = received
        self.port = port
    }

    /// The redirect's query parameters, once the browser comes back; `ClientError.timedOut` after `timeout`.
    public func parameters(timeout: Duration) async throws -> [String: String] {
        let loop = channel.eventLoop
        let received = self.received
        let timer = loop.scheduleTask(in: .nanoseconds(HTTPTransport.nanoseconds(timeout))) {
            received.fail(ClientError.timedOut("nobody came back to \(self.uri) within \(timeout)"))
        }
        defer { timer.cancel() }
        return try await received.futureResult.get()
    }

    public func close() async {
        received.fail(CancellationError())
        try? await channel.close()
    }

    private final class Handler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let received: EventLoopPromise<[String: String]>
        var head: HTTPRequestHead?
        init(received: EventLoopPromise<[String: String]>) { self.received = received }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let h): head = h
            case .body: break
            case .end:
                guard let head else { return }
                let components = URLComponents(string: head.uri)
                let found = head.method == .GET && components?.path == "/callback"
                if found {
                    let items = components?.queryItems ?? []
                    received.succeed(
                        Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
                    )
                }
                let text =
                    found
                    ? "Countersign: you may close this tab and go back to the terminal.\n"
                    : "Not found.\n"
                var headers = HTTPHeaders()
                headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
                headers.add(name: "Content-Length", value: "\(text.utf8.count)")
                headers.add(name: "Cache-Control", value: "no-store")
                headers.add(name: "Connection", value: "close")
                context.write(
                    wrapOutboundOut(
                        .head(
                            HTTPResponseHead(version: head.version, status: found ? .ok : .notFound, headers: headers)
                        )
                    ),
                    promise: nil
                )
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in context.close(promise: nil) }
            }
        }
    }
}
