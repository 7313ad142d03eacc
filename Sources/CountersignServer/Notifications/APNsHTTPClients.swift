import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// The HTTP/2 clients APNs pushes are posted with, for the life of the process (never deinitialised: a client
/// must be shut down first, and these outlive every test's server): one per set of trust roots, each keeping
/// one connection per APNs host (production, sandbox) and multiplexing the pushes over it.
enum APNsHTTPClients {
    private static let clients = Mutex<[String: HTTPClient]>([:])

    static func client(caFile: String?) throws -> HTTPClient {
        try clients.withLock { clients in
            if let c = clients[caFile ?? ""] { return c }
            var tls = TLSConfiguration.makeClientConfiguration()
            if let caFile { tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile)) }
            var configuration = HTTPClient.Configuration(
                tlsConfiguration: tls,
                redirectConfiguration: .disallow,
                timeout: .init(connect: .seconds(10), read: .seconds(30))
            )
            configuration.httpVersion = .automatic
            let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
            clients[caFile ?? ""] = client
            return client
        }
    }

    static func transport(caFile: String?) -> APNsSender.Transport {
        { request in
            var r = HTTPClientRequest(url: request.url.absoluteString)
            r.method = .POST
            for (name, value) in request.headers { r.headers.add(name: name, value: value) }
            r.body = .bytes(ByteBuffer(bytes: request.body))
            let response = try await client(caFile: caFile).execute(r, deadline: .now() + .seconds(30))
            let body = (try? await response.body.collect(upTo: 4096)) ?? ByteBuffer()
            let reason = (try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any])?["reason"]
            // Apple's reasons are single words; anything else is not repeated into the log.
            let word = (reason as? String).flatMap { $0.wholeMatch(of: #/[A-Za-z]{1,64}/#) != nil ? $0 : nil }
            return APNsSender.Answer(
                status: Int(response.status.code),
                reason: word,
                retryAfter: response.headers.first(name: "retry-after").flatMap { TimeInterval($0) }
            )
        }
    }
}
