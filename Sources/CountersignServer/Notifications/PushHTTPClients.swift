import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// The HTTP clients pushes are posted with, for the life of the process (never deinitialised: a client must
/// be shut down first, and these outlive every test's server). A host whose addresses were checked is posted
/// to through a client that connects to the checked address (`dnsOverride`; the certificate is still verified
/// for the host name); a host allowed by name, or an IP literal, through one that connects as the URL says.
enum PushHTTPClients {
    /// Pinned clients kept at once; the oldest is shut down when another is needed.
    static let maxPinned = 64
    private static let byHost = Mutex<[String: (address: String, client: HTTPClient, made: ContinuousClock.Instant)]>(
        [:]
    )

    private static func configuration(
        pinning host: String? = nil,
        to address: String? = nil
    )
        -> HTTPClient.Configuration
    {
        var configuration = HTTPClient.Configuration(
            // A redirect would go where the check did not look.
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(5), read: .seconds(10))
        )
        if let host, let address { configuration.dnsOverride = [host: address] }
        return configuration
    }

    private static let unpinned = HTTPClient(
        eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
        configuration: configuration()
    )

    private static func client(host: String, pinned: String?) -> HTTPClient {
        guard let pinned else { return unpinned }
        let (client, retired) = byHost.withLock { clients -> (HTTPClient, [HTTPClient]) in
            if let c = clients[host], c.address == pinned { return (c.client, []) }
            var retired: [HTTPClient] = []
            if let old = clients.removeValue(forKey: host) { retired.append(old.client) }
            if clients.count >= maxPinned, let oldest = clients.min(by: { $0.value.made < $1.value.made }) {
                retired.append(oldest.value.client)
                clients[oldest.key] = nil
            }
            let made = HTTPClient(
                eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
                configuration: configuration(pinning: host, to: pinned)
            )
            clients[host] = (pinned, made, .now)
            return (made, retired)
        }
        for old in retired {
            // Requests in flight on it have at most 15 seconds left.
            Task {
                try? await Task.sleep(for: .seconds(20))
                try? await old.shutdown()
            }
        }
        return client
    }

    /// A POST of a push: 15 seconds at most, the answer's body not read beyond 4 KiB.
    static let webPush: WebPushSender.Transport = { request in
        var r = HTTPClientRequest(url: request.url.absoluteString)
        r.method = .POST
        for (name, value) in request.headers { r.headers.add(name: name, value: value) }
        r.body = .bytes(ByteBuffer(bytes: request.body))
        let client = client(host: request.host, pinned: request.pinned)
        let response = try await client.execute(r, deadline: .now() + .seconds(15))
        _ = try? await response.body.collect(upTo: 4096)
        let retryAfter = response.headers.first(name: "Retry-After").flatMap { TimeInterval($0) }
        return WebPushSender.Answer(status: Int(response.status.code), retryAfter: retryAfter)
    }

    /// Threads of their own for name lookups (getaddrinfo blocks): a slow name server holds up only these.
    private static let resolvers: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 4)
        pool.start()
        return pool
    }()

    /// The host's addresses, or none when it has none or they take longer than 5 seconds to come (the lookup
    /// itself cannot be stopped: it ends on its own thread).
    static func resolve(_ host: String) async -> [[UInt8]] {
        let waiting = Mutex<CheckedContinuation<[[UInt8]], Never>?>(nil)
        let finish: @Sendable ([[UInt8]]) -> Void = { value in waiting.withLock { $0.take() }?.resume(returning: value)
        }
        return await withCheckedContinuation { continuation in
            waiting.withLock { $0 = continuation }
            resolvers.submit { state in finish(state == .active ? PushEndpointPolicy.resolve(host) : []) }
            Task {
                try? await Task.sleep(for: .seconds(5))
                finish([])
            }
        }
    }
}
