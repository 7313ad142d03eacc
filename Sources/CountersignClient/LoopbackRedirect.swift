import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A native app's redirect URI (RFC 8252 §7.3): an HTTP listener on 127.0.0.1 and a port the system chose,
/// which takes the first request to `/callback` that carries this request's `state`, answers the browser with
/// a page saying it may close the tab, and hands over the query. A callback with another state is answered
/// 400 and waited past (another local process cannot end the flow); any other path is 404; it never follows
/// anything it is sent, and a connection idle for 30 seconds is closed.
public final class LoopbackRedirect: Sendable {
    public let port: Int
    /// `http://127.0.0.1:PORT/callback`.
    public var uri: String { "http://127.0.0.1:\(port)/callback" }
    private let channel: any Channel
    private let received: EventLoopPromise<[String: String]>

    public static func start(state: String) async throws -> LoopbackRedirect {
        let group = MultiThreadedEventLoopGroup.singleton
        let loop = group.next()
        let box = PromiseBox()
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 8)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandlers([
                        IdleStateHandler(allTimeout: .seconds(30)), Handler(box: box, state: state),
                    ])
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        // Made once bound: a promise dropped without an answer is a programming error NIO stops on.
        let promise = loop.makePromise(of: [String: String].self)
        box.set(promise)
        return LoopbackRedirect(channel: channel, received: promise, port: channel.localAddress?.port ?? 0)
    }

    /// The promise the handlers answer, set once the listener is bound (a request before that is refused).
    final class PromiseBox: @unchecked Sendable {
        private let lock = NSLock()
        private var promise: EventLoopPromise<[String: String]>?
        func set(_ p: EventLoopPromise<[String: String]>) { lock.withLock { promise = p } }
        var value: EventLoopPromise<[String: String]>? { lock.withLock { promise } }
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
        let box: PromiseBox
        let state: String
        var head: HTTPRequestHead?
        init(box: PromiseBox, state: String) {
            self.box = box
            self.state = state
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is IdleStateHandler.IdleStateEvent { context.close(promise: nil) }
            context.fireUserInboundEventTriggered(event)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let h): head = h
            case .body: break
            case .end:
                guard let head else { return }
                let components = URLComponents(string: head.uri)
                let query = Dictionary(
                    (components?.queryItems ?? []).map { ($0.name, $0.value ?? "") },
                    uniquingKeysWith: { first, _ in first }
                )
                let status: HTTPResponseStatus
                let text: String
                if head.method != .GET || components?.path != "/callback" {
                    (status, text) = (.notFound, "Not found.\n")
                } else if query["state"] != state || box.value == nil {
                    (status, text) = (.badRequest, "Countersign: this is not the answer the terminal is waiting for.\n")
                } else if let error = query["error"] {
                    (status, text) = (
                        .ok,
                        "Countersign: nothing was paired (\(error.filter { $0.isLetter || $0 == "_" })). You may close this tab; the terminal says more.\n"
                    )
                } else {
                    (status, text) = (
                        .ok, "Countersign: go back to the terminal to confirm the pairing. You may close this tab.\n"
                    )
                }
                var headers = HTTPHeaders()
                headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
                headers.add(name: "Content-Length", value: "\(text.utf8.count)")
                headers.add(name: "Cache-Control", value: "no-store")
                headers.add(name: "Connection", value: "close")
                context.write(
                    wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
                    promise: nil
                )
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
                // The answer is handed over once the page is on its way: a caller that exits at once (an error)
                // must not leave the browser with a refused connection.
                let answered = status == .ok ? box.value : nil
                context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                    answered?.succeed(query)
                    context.close(promise: nil)
                }
            }
        }
    }
}
