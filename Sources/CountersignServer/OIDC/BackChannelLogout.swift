import CountersignAPI
import Foundation
import JWTKit
import Logging

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

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

    /// Sends the logout tokens for `grants` (revoked), one per client and session; returns when every one was
    /// delivered or given up.
    func send(_ grants: [OIDCGrant]) async {
        var seen = Set<String>()
        for grant in grants where seen.insert(grant.clientID + "\u{0}" + grant.sessionID).inserted {
            guard let client = try? await oidc.store.oidcClient(id: grant.clientID),
                let uri = client.backchannelLogoutURI, let issuer = oidc.issuer
            else { continue }
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
            guard let signed = try? await oidc.keys.sign(token, algorithm: client.idTokenAlgorithm, type: "logout+jwt")
            else { continue }
            await post(signed, to: uri, client: client.id)
        }
    }

    private func post(_ token: String, to uri: String, client: String) async {
        for (attempt, wait) in ([Duration.zero] + Self.backoff).enumerated() {
            if wait > .zero { try? await Task.sleep(for: wait) }
            do {
                let status = try await deliver(uri, token)
                if (200..<300).contains(status) { return }
                logger.warning("back-channel logout to \(client) answered \(status) (try \(attempt + 1))")
            } catch {
                logger.warning("back-channel logout to \(client) failed: \(error) (try \(attempt + 1))")
            }
        }
        logger.error("back-channel logout to \(client) at \(uri) given up after \(Self.backoff.count + 1) tries")
    }

    /// The real delivery: an HTTP POST of the form `logout_token=…`, answered within 10 seconds.
    package static let http: Deliver = { uri, token in
        guard let url = URL(string: uri) else { return 0 }
        var request = URLRequest(url: url, timeoutInterval: 10)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data("logout_token=\(OIDCService.formEncoded(token))".utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }
}
