import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// The HTTP clients pushes are posted with, for the life of the process (never deinitialised: a client
/// must be shut down first, and these outlive every test's server). A host whose addresses were checked is
/// posted to through a client that connects to the checked address (`dnsOverride`; the certificate is
/// still verified for the host name), replaced when the address changes.
enum PushHTTPClients {
    private static let byHost = Mutex<[String: (address: String, client: HTTPClient)]>([:])

    private static func configuration(
        pinning host: String? = nil,
        to address: String? = nil
    ) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(
            // A redirect would go where the check did not look.
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(5), read: .seconds(10))
        )
        if let host, let address { configuration.dnsOverride = [host: address] }
        return configuration
    }

    /// Hosts allowed by name: resolved by the client, as any name.
    private static let unpinned = HTTPClient(
        eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
        configuration: configuration()
    )

    private static func client(host: String, pinned: String?) -> HTTPClient {
        guard let pinned else { return unpinned }
        let (client, retired) = byHost.withLock { clients -> (HTTPClient, HTTPClient?) in
            if let c = clients[host], c.address == pinned { return (c.client, nil) }
            let made = HTTPClient(
                eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
                configuration: configuration(pinning: host, to: pinned)
            )
            let old = clients[host]?.client
            clients[host] = (pinned, made)
            return (made, old)
        }
        if let retired {
            // Requests in flight on it have at most 15 seconds left.
            Task {
                try? await Task.sleep(for: .seconds(20))
                try? await retired.shutdown()
            }
        }
        return client
    }

    /// A POST of a push: 15 seconds at most, the answer's body not read beyond 4 KiB.
    static let webPush: WebPushSender.Transport = { request in
        guard let host = request.url.host else { throw HTTPClientError.invalidURL }
        var r = HTTPClientRequest(url: request.url.absoluteString)
        r.method = .POST
        for (name, value) in request.headers { r.headers.add(name: name, value: value) }
        r.body = .bytes(ByteBuffer(bytes: request.body))
        let response = try await client(host: host, pinned: request.pinned).execute(r, deadline: .now() + .seconds(15))
        _ = try? await response.body.collect(upTo: 4096)
        let retryAfter = response.headers.first(name: "Retry-After").flatMap { TimeInterval($0) }
        return WebPushSender.Answer(status: Int(response.status.code), retryAfter: retryAfter)
    }

    /// The host's addresses, resolved on NIO's blocking-work threads.
    static func resolve(_ host: String) async -> [[UInt8]] {
        (try? await NIOThreadPool.singleton.runIfActive { PushEndpointPolicy.resolve(host) }) ?? []
    }
}
