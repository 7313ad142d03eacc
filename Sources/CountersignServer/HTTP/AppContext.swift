import Hummingbird
import NIOCore

/// The per-request context: the peer address, for throttling and audit. Bodies are read by
/// `APIRoutes.decode` with the configured limit, not through the context's `maxUploadSize`.
public struct AppContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let peerAddress: String

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerAddress = ClientAddress.normalize(source.channel.remoteAddress?.ipAddress ?? "unknown")
    }
}
