import NIOCore
import NIOHTTPTypes

/// Closes a connection whose request body is still arriving `timeout` after its headers did. The idle
/// timeout alone would not do: each body byte counts as activity, so a client trickling a byte every few
/// seconds (slow POST) would keep the connection, and its request handler, for ever.
final class ReadTimeoutHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    let timeout: TimeAmount
    private var deadline: Scheduled<Void>?

    init(timeout: TimeAmount) { self.timeout = timeout }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            deadline?.cancel()
            let channel = context.channel
            deadline = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
        case .body:
            break
        case .end:
            deadline?.cancel()
            deadline = nil
        }
        context.fireChannelRead(data)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }
}
