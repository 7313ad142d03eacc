import Hummingbird
import NIOCore

/// The per-request context: the client's address, for throttling and audit (the peer's, or what a
/// trusted proxy forwards: `TrustedProxyMiddleware`). Bodies are read by
/// `APIRoutes.decode` with the configured limit, not through the context's `maxUploadSize`.
public struct AppContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public internal(set) var peerAddress: String

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerAddress = ClientAddress.normalize(source.channel.remoteAddress?.ipAddress ?? "unknown")
    }
}
