import CountersignAPI
import Foundation
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket

/// Each accepted connection: HTTP/1.1 for the API, or, when its first request is a WebSocket upgrade of
/// `GET /v1/push`, a push connection served by `PushSocketHandler` alone. Unlike hummingbird-websocket's
/// channel, an upgraded connection keeps no task and no async stream: that is most of what an idle
/// connection would otherwise cost (docs/DESIGN.md, "Push").
struct PushChildChannel: ServerChildChannel, HTTPChannelHandler {
    enum Upgrade: Sendable {
        case push
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, refused: Bool)
    }

    struct Value: ServerChildChannelValue {
        let upgrade: EventLoopFuture<Upgrade>
        let channel: any Channel
    }

    let responder: HTTPChannelHandler.Responder
    let push: PushService
    let idleTimeout: TimeAmount
    let additionalHandlers: @Sendable () -> [any RemovableChannelHandler]
    let limiter: ConnectionLimiter?

    /// The path of the push channel; an upgrade request for any other is answered 400.
    static let path = "/v1/push"

    init(
        responder: @escaping HTTPChannelHandler.Responder,
        push: PushService,
        idleTimeout: TimeAmount,
        limiter: ConnectionLimiter? = nil,
        additionalHandlers: @escaping @Sendable () -> [any RemovableChannelHandler]
    ) {
        self.push = push
        self.idleTimeout = idleTimeout
        self.additionalHandlers = additionalHandlers
        self.limiter = limiter
        // NIO only upgrades a connection's first request; a later one on a kept-alive connection is told
        // to come again on a new connection, as hummingbird-websocket does.
        self.responder = { request, writer, channel in
            if request.headers[.upgrade]?.lowercased() == "websocket" {
                try await writer.writeResponse(
                    HTTPResponse(
                        status: .temporaryRedirect,
                        headerFields: [.connection: "close", .location: request.uri.string]
                    )
                )
                throw ChannelError.inputClosed
            }
            try await responder(request, writer, channel)
        }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let slot = limiter.map { $0.admit(channel) } ?? ConnectionLimiter.Slot(limiter: nil, address: "")
            guard let slot else {
                channel.close(promise: nil)
                throw ChannelError.inputClosed
            }
            let attempted = NIOLoopBoundBox(false, eventLoop: channel.eventLoop)
            let decided = NIOLoopBoundBox(false, eventLoop: channel.eventLoop)
            // Until the first request's headers are in, neither HTTP's idle timer nor the push channel's
            // hello timer runs: this one bounds that time (slowloris on the upgrade path).
            let deadline = channel.eventLoop.scheduleTask(in: idleTimeout) {
                if !decided.value { channel.close(promise: nil) }
            }
            let push = self.push
            let upgrader = NIOTypedWebSocketServerUpgrader<Upgrade>(
                // NIO buffers a whole frame before any handler sees it: no client frame is larger than this.
                maxFrameSize: PushFrame.maxClientFrame,
                shouldUpgrade: { channel, head in
                    attempted.value = true
                    let ok =
                        head.method == .GET
                        && head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) == Self.path
                    return channel.eventLoop.makeSucceededFuture(ok ? HTTPHeaders() : nil)
                },
                upgradePipelineHandler: { channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        decided.value = true
                        deadline.cancel()
                        try channel.pipeline.syncOperations.addHandler(PushSocketHandler(service: push, slot: slot))
                        return Upgrade.push
                    }
                }
            )
            let configuration = NIOTypedHTTPServerUpgradeConfiguration(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        decided.value = true
                        deadline.cancel()
                        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        try channel.pipeline.syncOperations.addHandlers(additionalHandlers())
                        try channel.pipeline.syncOperations.addHandler(
                            HTTPConnectionStateHandler(idleTimeout: .init(idleTimeout), logger: logger)
                        )
                        let async = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel,
                            configuration: .init(isOutboundHalfClosureEnabled: true)
                        )
                        return Upgrade.http(async, refused: attempted.value)
                    }
                }
            )
            var pipeline = NIOUpgradableHTTPServerPipelineConfiguration<Upgrade>(upgradeConfiguration: configuration)
            pipeline.enablePipelining = false
            pipeline.enableErrorHandling = false
            pipeline.enableResponseHeaderValidation = false
            let upgrade = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(
                configuration: pipeline
            )
            return Value(upgrade: upgrade, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.upgrade.get() {
            case .push:
                return  // the channel lives on in its pipeline; no task waits for it
            case .http(let channel, refused: false):
                await handleHTTP(asyncChannel: channel, logger: logger)
            case .http(let channel, refused: true):
                try await channel.executeThenClose { _, outbound in
                    try await outbound.write(contentsOf: [
                        .head(
                            HTTPResponse(
                                status: .badRequest,
                                headerFields: [.connection: "close", .contentLength: "0"]
                            )
                        ),
                        .end(nil),
                    ])
                }
            }
        } catch {
            logger.trace(
                "connection ended before its first request",
                metadata: ["error": "\(String(reflecting: type(of: error)))"]
            )
        }
    }
}
