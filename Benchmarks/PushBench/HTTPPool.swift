import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A minimal HTTP/1.1 client: a few keep-alive connections, one request at a time on each (the server
/// does not pipeline), requests spread round robin, each connection reconnecting when the server closed
/// it. Enough for tickets and sends, with no per-request task.
struct HTTPReply: Sendable {
    var status: Int
    var body: ByteBuffer
}

struct HTTPRequest: Sendable {
    var head: HTTPRequestHead
    var body: ByteBuffer?

    init(method: HTTPMethod, path: String, host: String, token: String?, json body: ByteBuffer?) {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: host)
        if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
        if body != nil { headers.add(name: "Content-Type", value: "application/json") }
        headers.add(name: "Content-Length", value: "\(body?.readableBytes ?? 0)")
        head = HTTPRequestHead(version: .http1_1, method: method, uri: path, headers: headers)
        self.body = body
    }
}

struct HTTPFailure: Error, CustomStringConvertible {
    let description: String
}

final class HTTPPool: Sendable {
    let connections: [HTTPConnection]
    private let next = Mutex(0)

    init(group: any EventLoopGroup, host: String, port: Int, size: Int) {
        connections = (0..<size).map { _ in HTTPConnection(loop: group.next(), host: host, port: port) }
    }

    /// `onWrite` runs on the connection's event loop just before the request's first byte is written.
    func send(_ request: HTTPRequest, onWrite: (@Sendable () -> Void)? = nil) -> EventLoopFuture<HTTPReply> {
        let i = next.withLock { n in
            defer { n = (n + 1) % connections.count }
            return n
        }
        return connections[i].send(request, onWrite: onWrite)
    }

    /// Opens every connection now, so the first timed requests do not pay for a TCP handshake.
    func open() async throws {
        for c in connections { try await c.open().get() }
    }

    func close() { for c in connections { c.close() } }
}

/// One keep-alive connection. All state lives on `loop`; the public calls hop to it.
final class HTTPConnection: @unchecked Sendable {
    private struct Pending {
        let request: HTTPRequest
        let promise: EventLoopPromise<HTTPReply>
        let onWrite: (@Sendable () -> Void)?
    }

    let loop: any EventLoop
    let host: String
    let port: Int
    private var channel: (any Channel)?
    private var connecting = false
    private var queue = CircularBuffer<Pending>()
    private var current: Pending?
    private var opened: [EventLoopPromise<Void>] = []

    init(loop: any EventLoop, host: String, port: Int) {
        self.loop = loop
        self.host = host
        self.port = port
    }

    func send(_ request: HTTPRequest, onWrite: (@Sendable () -> Void)?) -> EventLoopFuture<HTTPReply> {
        let promise = loop.makePromise(of: HTTPReply.self)
        loop.execute {
            self.queue.append(Pending(request: request, promise: promise, onWrite: onWrite))
            self.drive()
        }
        return promise.futureResult
    }

    func open() -> EventLoopFuture<Void> {
        let promise = loop.makePromise(of: Void.self)
        loop.execute {
            if self.channel?.isActive == true {
                promise.succeed()
                return
            }
            self.opened.append(promise)
            if !self.connecting { self.connect() }
        }
        return promise.futureResult
    }

    func close() { loop.execute { self.channel?.close(promise: nil) } }

    private func drive() {
        guard current == nil, !queue.isEmpty else { return }
        guard let channel, channel.isActive else {
            if !connecting { connect() }
            return
        }
        let item = queue.removeFirst()
        current = item
        item.onWrite?()
        channel.write(HTTPClientRequestPart.head(item.request.head), promise: nil)
        if let body = item.request.body { channel.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil) }
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
    }

    private func connect() {
        connecting = true
        ClientBootstrap(group: loop)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(ResponseCollector(owner: self))
                }
            }
            .connect(host: host, port: port)
            .whenComplete { result in
                self.connecting = false
                switch result {
                case .success(let channel):
                    self.channel = channel
                    self.opened.forEach { $0.succeed() }
                    self.opened = []
                    self.drive()
                case .failure(let error):
                    self.opened.forEach { $0.fail(error) }
                    self.opened = []
                    // Fail what waits rather than retrying forever.
                    while let item = self.queue.popFirst() { item.promise.fail(error) }
                }
            }
    }

    fileprivate func responded(_ reply: HTTPReply, closing: Bool) {
        let item = current
        current = nil
        if closing {
            channel?.close(promise: nil)
            channel = nil
        }
        item?.promise.succeed(reply)
        drive()
    }

    fileprivate func inactive(_ closed: any Channel) {
        guard channel === closed || channel == nil else { return }
        channel = nil
        if let item = current {
            current = nil
            item.promise.fail(HTTPFailure(description: "the server closed the connection before answering"))
        }
        drive()
    }
}

private final class ResponseCollector: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    let owner: HTTPConnection
    private var status = 0
    private var closing = false
    private var body: ByteBuffer?

    init(owner: HTTPConnection) { self.owner = owner }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
            closing = !head.isKeepAlive
            body = nil
        case .body(var part):
            if body == nil { body = part } else { body!.writeBuffer(&part) }
        case .end:
            owner.responded(HTTPReply(status: status, body: body ?? ByteBuffer()), closing: closing)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        owner.inactive(context.channel)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
