import Hummingbird
import NIOCore

/// The per-request context: the peer address (for throttling and audit) and, after authentication, the session.
public struct AppContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let peerAddress: String
    let maxBody: Int

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
        maxBody = AppContext.maxBodyBytes
    }

    /// Set once by `buildApplication` from the configuration, before the server starts.
    nonisolated(unsafe) static var maxBodyBytes = 64 * 1024

    public var maxUploadSize: Int { maxBody }
}
