import Hummingbird
import NIOCore

/// The per-request context: the client's address, for throttling and audit (the peer's, or what a
/// trusted proxy forwards: `TrustedProxyMiddleware`), and who the bearer token says the caller is, set
/// by the route group's session middleware (`AccountSessionMiddleware`, `DeviceSessionMiddleware`)
/// before the handler runs. Bodies are read by `APIRoutes.decode` with the configured limit, not
/// through the context's `maxUploadSize`.
public struct AppContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public internal(set) var peerAddress: String
    /// The account session, on routes behind `AccountSessionMiddleware`.
    var accountSession: Authenticated?
    /// The device session, on routes behind `DeviceSessionMiddleware`.
    var deviceSession: DeviceAuthenticated?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerAddress = ClientAddress.normalize(source.channel.remoteAddress?.ipAddress ?? "unknown")
    }

    /// The caller's account session; 401 on a route its middleware does not guard.
    func account() throws -> Authenticated {
        guard let accountSession else { throw SessionError.noAccountSession }
        return accountSession
    }

    /// The caller's device session; 401 on a route its middleware does not guard.
    func device() throws -> DeviceAuthenticated {
        guard let deviceSession else { throw SessionError.noDeviceSession }
        return deviceSession
    }
}
