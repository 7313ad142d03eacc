import AsyncHTTPClient
import CountersignAPI
import Foundation
import JWTKit
import Logging
import NIOCore
import NIOPosix

/// OpenID Connect Back-Channel Logout 1.0 (docs/PROTOCOL.md §6.8): when grants end because their account's
/// sessions ended, each client that registered a `backchannel_logout_uri` is sent a signed logout token for
/// each browser session it had, by a POST the sign-out never waits for, tried again with backoff.
package struct BackChannelLogout: Sendable {
    struct LogoutToken: JWTPayload {
        var iss: String
        var aud: String
        var iat: Int
        var exp: Int
        var jti: String
        var sub: String
        var sid: String
        var events: [String: [String: String]]
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    static let event = "http://schemas.openid.net/event/backchannel-logout"
    /// Waits before each try after the first: a receiver down for a minute still hears of it.
    static let backoff: [Duration] = [.seconds(2), .seconds(10), .seconds(60)]

    /// Posts `logout_token` to a URI: 2xx is done; anything else, or no answer, is tried again.
    package typealias Deliver = @Sendable (_ uri: String, _ logoutToken: String) async throws -> Int

    let oidc: OIDCService
    let deliver: Deliver
    let logger: Logger

    /// Sends the logout tokens for `grants` (revoked), one per client and session, the clients side by side;
    /// returns when every one was delivered or given up.
    func send(_ grants: [OIDCGrant]) async {
        var seen = Set<String>()
        var byClient: [String: [OIDCGrant]] = [:]
        for grant in grants where seen.insert(grant.clientID + "\u{0}" + grant.sessionID).inserted {
            byClient[grant.clientID, default: []].append(grant)
        }
        await withTaskGroup(of: Void.self) { group in
            for (clientID, grants) in byClient {
                group.addTask { await send(grants, clientID: clientID) }
            }
        }
    }

    private func send(_ grants: [OIDCGrant], clientID: String) async {
        let client: OIDCClient?
        do { client = try await oidc.store.oidcClient(id: clientID) } catch {
            logger.error(
                "back-channel logout to \(clientID) not sent: the client could not be read (\(type(of: error)))"
            )
            return
        }
        guard let client, let uri = client.backchannelLogoutURI, let issuer = oidc.issuer else { return }
        let host = URL(string: uri)?.host() ?? "?"
        for grant in grants {
            for (attempt, wait) in ([Duration.zero] + Self.backoff).enumerated() {
                if wait > .zero { try? await Task.sleep(for: wait) }
                // The server is stopping (BackgroundWork.drain): no more tries, nothing more read from the database.
                if Task.isCancelled { return }
                // A fresh token each try: its own jti, and an exp that is two minutes from when it is sent.
                let now = oidc.clock.now()
                let token = LogoutToken(
                    iss: issuer,
                    aud: client.id,
                    iat: Int(now.timeIntervalSince1970),
                    exp: Int(now.addingTimeInterval(120).timeIntervalSince1970),
                    jti: Base64URL(oidc.random.bytes(16)).text,
                    sub: oidc.subject(client, grant.accountID),
                    sid: oidc.sid(client, grant.sessionID),
                    events: [Self.event: [:]]
                )
                do {
                    let signed = try await oidc.keys.sign(token, algorithm: client.idTokenAlgorithm, type: "logout+jwt")
                    let status = try await deliver(uri, signed)
                    if (200..<300).contains(status) { break }
                    logger.warning(
                        "back-channel logout to \(client.id) at \(host) answered \(status) (try \(attempt + 1))"
                    )
                    // The receiver refused this token: sending it again changes nothing.
                    if (400..<500).contains(status) && status != 408 && status != 429 { break }
                } catch {
                    logger.warning(
                        "back-channel logout to \(client.id) at \(host) failed: \(type(of: error)) (try \(attempt + 1))"
                    )
                }
                if attempt == Self.backoff.count {
                    logger.error("back-channel logout to \(client.id) at \(host) given up after \(attempt + 1) tries")
                }
            }
        }
    }

    /// The real delivery: an HTTP POST of the form `logout_token=…`; no redirect followed (a 3xx is a failure:
    /// the receiver is the registered URI, nowhere else), 10 seconds at most, the answer's body not read.
    package static let http: Deliver = { uri, token in
        var request = HTTPClientRequest(url: uri)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: "logout_token=\(OIDCService.formEncoded(token))"))
        let response = try await client.execute(request, deadline: .now() + .seconds(10))
        return Int(response.status.code)
    }

    /// One client for every logout, for the life of the process (never shut down, never deinitialised).
    private static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(5), read: .seconds(10))
        )
        configuration.httpVersion = .http1Only
        return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }()
}
