import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// One HTTP exchange with the server under `RequestLimits`, over SwiftNIO (AsyncHTTPClient). Not
/// URLSession: on Linux (libcurl driven by Dispatch) it kept a core busy while a server held a connection
/// open without answering (issue 19.12: 34 s of system CPU in 45 s), and it buffered whatever came.
enum HTTPTransport {
    struct Response: Sendable {
        var status: Int
        var location: String?
        var body: [UInt8]
    }

    /// One client per way out, for the process: it pools connections across `CountersignClient`s. Never
    /// shut down (a static lives until exit, and the singleton event loops need no shutdown).
    static let direct = makeClient(proxy: nil)
    static let viaHTTPProxy = proxy(from: ["http_proxy", "all_proxy", "ALL_PROXY"]).map { makeClient(proxy: $0) }
    static let viaHTTPSProxy = proxy(from: ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]).map {
        makeClient(proxy: $0)
    }

    /// The proxy settings curl reads (and so URLSession did), so a machine behind a proxy keeps working:
    /// `https_proxy` for https URLs, `http_proxy` (lower case only, as curl: httpoxy) for http, `all_proxy`
    /// for both (http:// proxies, tunnelling with CONNECT, or socks5://), and no proxy for a host `no_proxy`
    /// names (`*`, a host, or a domain and its subdomains).
    static func client(for url: URL, environment: [String: String] = ProcessInfo.processInfo.environment) -> HTTPClient
    {
        let host = (url.host ?? "").lowercased()
        let bypass = (environment["no_proxy"] ?? environment["NO_PROXY"] ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
            .contains { entry in
                let domain = entry.hasPrefix(".") ? String(entry.dropFirst()) : entry
                return entry == "*" || host == domain || host.hasSuffix("." + domain)
            }
        if bypass { return direct }
        return (url.scheme == "https" ? viaHTTPSProxy : viaHTTPProxy) ?? direct
    }

    static func proxy(
        from names: [String],
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> HTTPClient.Configuration.Proxy? {
        guard let text = names.lazy.compactMap({ environment[$0] }).first(where: { !$0.isEmpty }),
            let url = URL(string: text.contains("://") ? text : "http://" + text), let host = url.host
        else { return nil }
        if url.scheme == "socks5" || url.scheme == "socks5h" { return .socksServer(host: host, port: url.port ?? 1080) }
        // Anything but an HTTP proxy or SOCKS5 (https://, socks4…) is not spoken here: go direct rather than misuse it.
        guard url.scheme == "http" else { return nil }
        if let user = url.user {
            return .server(
                host: host,
                port: url.port ?? 80,
                authorization: .basic(
                    username: user.removingPercentEncoding ?? user,
                    password: (url.password ?? "").removingPercentEncoding ?? ""
                )
            )
        }
        return .server(host: host, port: url.port ?? 80)
    }

    static func makeClient(proxy: HTTPClient.Configuration.Proxy?) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.proxy = proxy
        // The API never redirects; following one would carry the credentials along (ClientError.redirected).
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: .nanoseconds(nanoseconds(RequestLimits.connect)))
        // A refused connection fails the request at once instead of being retried until the connect deadline.
        configuration.connectionPool.retryConnectionEstablishment = false
        // As many parallel requests to one server as a benchmark's senders make, without queueing.
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 64
        // Closed here before the server's idle timeout (30 s by default) closes it there, so a request is
        // not sent on a connection the server is closing.
        configuration.connectionPool.idleTimeout = .seconds(20)
        configuration.decompression = .disabled
        return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }

    static func nanoseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// Sends `request` and reads the whole answer, or throws `ClientError.timedOut` (connect, first byte,
    /// whole), `.responseTooLarge`, or `.transport` in words.
    static func exchange(_ request: HTTPClientRequest, limits: RequestLimits, server: URL) async throws -> Response {
        let host = server.host.map { "\($0)\(server.port.map { ":\($0)" } ?? "")" } ?? server.absoluteString
        do {
            return try await withThrowingTaskGroup(of: Response.self) { group in
                group.addTask {
                    let deadline = NIODeadline.now() + .nanoseconds(nanoseconds(limits.firstByte))
                    let response: HTTPClientResponse
                    do {
                        response = try await client(for: server).execute(request, deadline: deadline)
                    } catch ChannelError.ioOnClosedChannel {
                        // A pooled connection the server had closed (it restarted): the request was never
                        // written, so sending it once more on a new connection cannot apply it twice.
                        response = try await client(for: server).execute(request, deadline: deadline)
                    }
                    let location = response.headers.first(name: "Location")
                    // A declared length over the cap is refused before a byte of it is read.
                    if let declared = response.headers.first(name: "Content-Length").flatMap(Int.init),
                        declared > limits.maxBody
                    {
                        throw ClientError.responseTooLarge(limit: limits.maxBody)
                    }
                    var body: [UInt8] = []
                    for try await chunk in response.body {
                        // Leaving the loop drops the body stream, which closes the connection.
                        guard body.count + chunk.readableBytes <= limits.maxBody else {
                            throw ClientError.responseTooLarge(limit: limits.maxBody)
                        }
                        body.append(contentsOf: chunk.readableBytesView)
                    }
                    return Response(status: Int(response.status.code), location: location, body: body)
                }
                group.addTask {
                    try await Task.sleep(for: limits.whole)
                    throw ClientError.timedOut(
                        "the server at \(host) did not finish its answer within \(seconds(limits.whole)); try again later"
                    )
                }
                defer { group.cancelAll() }
                return try await group.next()!
            }
        } catch let e as ClientError {
            throw e
        } catch let e as HTTPClientError where e == .deadlineExceeded {
            throw ClientError.timedOut(
                """
                no answer from the server at \(host) within \(seconds(limits.firstByte)); check that the server URL names \
                a Countersign server (http:// or https:// as it serves) and that it is up, then try again
                """
            )
        } catch let e as HTTPClientError where e == .connectTimeout || e == .tlsHandshakeTimeout {
            throw ClientError.timedOut(connectTimedOut(host, tls: server.scheme == "https"))
        } catch ChannelError.connectTimeout {
            throw ClientError.timedOut(connectTimedOut(host, tls: server.scheme == "https"))
        } catch is CancellationError {
            throw CancellationError()
        } catch let e as HTTPClientError where e == .cancelled {
            throw CancellationError()
        } catch {
            throw ClientError.transport(describe(error, host: host, tls: server.scheme == "https"))
        }
    }

    static func seconds(_ d: Duration) -> String { "\(d.components.seconds) s" }

    /// A plain HTTP server given an https:// URL never answers the TLS handshake: it waits for a request.
    static func connectTimedOut(_ host: String, tls: Bool) -> String {
        "could not connect to \(host) within \(seconds(RequestLimits.connect))"
            + (tls
                ? " (TCP and TLS handshake); if the server serves plain HTTP, use an http:// URL, else check the URL and your network"
                : "; check the server URL and your network")
    }

    /// What went wrong, in words, with what to check.
    static func describe(_ error: any Error, host: String, tls: Bool) -> String {
        switch error {
        case let e as NIOConnectionError:
            let why =
                e.connectionErrors.first.map { "\($0.error)" } ?? e.dnsAAAAError.map { "\($0)" } ?? e.dnsAError.map {
                    "\($0)"
                } ?? "no address"
            return "cannot connect to \(host) (\(why)); check that the server is running and the URL is right"
        case let e as IOError where e.errnoCode == ECONNREFUSED:
            return
                "\(host) refused the connection; check that the server is running and the URL (host and port) is right"
        case let e as IOError:
            return "connection to \(host) failed: \(e.description)"
        case is NIOSSLError, is BoringSSLError:
            return
                "the TLS handshake with \(host) failed (\(error)); if the server serves plain HTTP, use an http:// URL"
        case let e as HTTPClientError where e == .remoteConnectionClosed:
            return "\(host) closed the connection without answering"
        case is HTTPParserError:
            return
                "\(host) answered something that is not HTTP (\(error))\(tls ? "" : "; if it serves HTTPS, use an https:// URL")"
        default:
            return "\(host): \(error)"
        }
    }
}
