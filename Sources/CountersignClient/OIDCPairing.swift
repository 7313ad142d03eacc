import AsyncHTTPClient
import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import JWTKit
import NIOCore
import NIOHTTP1

/// Why pairing by OpenID Connect failed (docs/PROTOCOL.md §6.11). Closed.
public enum OIDCPairingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The issuer's metadata or keys could not be read, or do not name the issuer exactly.
    case discovery(String)
    /// The provider sent the browser back with an error (RFC 6749 §4.1.2.1), or without a code.
    case authorization(error: String, description: String)
    /// The redirect did not match the request: another `state`, or another issuer (`iss`, RFC 9207).
    case mismatchedRedirect(String)
    /// The ID token does not verify: signature, issuer, audience, expiry or nonce.
    case idToken(String)
    /// The ID token carries no pairing grant: the request had no mobile payload, or its grant was issued
    /// with an earlier token.
    case noPairingGrant
    /// The grant is for another payload or another key than this device's.
    case otherPayload
    /// The grant expired before it was approved.
    case expired

    public var description: String {
        switch self {
        case .discovery(let why): "the provider's discovery failed: \(why)"
        case .authorization(let error, let description): "the provider refused: \(error): \(description)"
        case .mismatchedRedirect(let why): "the redirect is not the answer to this request: \(why)"
        case .idToken(let why): "the ID token is refused: \(why)"
        case .noPairingGrant: "the ID token carries no pairing grant (urn:countersign:pairing)"
        case .otherPayload: "the pairing grant is for another mobile payload or another key than this device's"
        case .expired: "the pairing grant expired: start the pairing again"
        }
    }
}

/// An OpenID Connect provider as its discovery document describes it (only what a native app needs).
public struct OIDCProvider: Sendable {
    public let issuer: String
    public let authorizationEndpoint: URL
    public let tokenEndpoint: URL
    public let jwksURI: URL

    struct Metadata: Decodable {
        var issuer: String
        var authorization_endpoint: String
        var token_endpoint: String
        var jwks_uri: String
    }

    /// Reads `ISSUER/.well-known/openid-configuration` and checks that it names `issuer` exactly
    /// (OpenID Connect Discovery 1.0 §4.3).
    public static func discover(_ issuer: String) async throws -> OIDCProvider {
        let issuer = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        guard let base = URL(string: issuer), let host = base.host,
            base.scheme == "https"
                || (base.scheme == "http" && ["127.0.0.1", "::1", "[::1]", "localhost"].contains(host))
        else {
            throw OIDCPairingError.discovery(
                "\(issuer) is not an https:// URL (http:// only for a provider on this machine's loopback)"
            )
        }
        let data = try await fetch(issuer + "/.well-known/openid-configuration")
        guard let m = try? JSONDecoder().decode(Metadata.self, from: Data(data)) else {
            throw OIDCPairingError.discovery("\(issuer)/.well-known/openid-configuration is not provider metadata")
        }
        guard m.issuer == issuer else {
            throw OIDCPairingError.discovery(
                "the metadata names issuer \(m.issuer), not \(issuer): give \(m.issuer) exactly (--oidc \(m.issuer))"
            )
        }
        // Every endpoint on the issuer's own origin: tokens and keys come from where the issuer is.
        let endpoints = [m.authorization_endpoint, m.token_endpoint, m.jwks_uri].compactMap(URL.init(string:))
        guard endpoints.count == 3,
            endpoints.allSatisfy({ $0.scheme == base.scheme && $0.host == base.host && $0.port == base.port })
        else {
            throw OIDCPairingError.discovery("the metadata's endpoints are not URLs on \(issuer) itself")
        }
        let (a, t, j) = (endpoints[0], endpoints[1], endpoints[2])
        return OIDCProvider(issuer: issuer, authorizationEndpoint: a, tokenEndpoint: t, jwksURI: j)
    }

    /// The keys the provider publishes, for verifying its ID tokens.
    func keys() async throws -> JWTKeyCollection {
        let data = try await Self.fetch(jwksURI.absoluteString)
        do {
            return try await JWTKeyCollection().add(jwksJSON: String(decoding: data, as: UTF8.self))
        } catch {
            throw OIDCPairingError.discovery("\(jwksURI) is not a JWKS: \(error)")
        }
    }

    static func fetch(_ url: String, form: [String: String]? = nil) async throws -> [UInt8] {
        guard let server = URL(string: url) else { throw OIDCPairingError.discovery("\(url) is not a URL") }
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: CountersignClient.defaultUserAgent)
        if let form {
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(string: formEncoded(form)))
        }
        let response = try await HTTPTransport.exchange(request, limits: .interactive, server: server)
        guard (200..<300).contains(response.status) else {
            let body = String(decoding: response.body.prefix(300), as: UTF8.self)
            if form != nil, let error = try? JSONDecoder().decode([String: String].self, from: Data(response.body)),
                let code = error["error"]
            {
                throw OIDCPairingError.authorization(error: code, description: error["error_description"] ?? "")
            }
            throw OIDCPairingError.discovery("\(url) answered \(response.status): \(body)")
        }
        return response.body
    }

    static func formEncoded(_ fields: [String: String]) -> String {
        let unreserved = CharacterSet(
            charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
        )
        return fields.sorted { $0.key < $1.key }.map {
            "\($0.key.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "")="
                + "\($0.value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "")"
        }.joined(separator: "&")
    }
}

/// A native app's authorization (RFC 8252): PKCE (S256), `state` and `nonce`, a loopback redirect URI, the
/// code exchanged at the token endpoint as a public client.
public final class OIDCNativeAuthorization: Sendable {
    public let provider: OIDCProvider
    public let clientID: String
    public let nonce: String
    /// The URL to open in a browser.
    public let url: URL
    let state: String
    let verifier: String
    let redirect: LoopbackRedirect

    /// Starts listening on the loopback interface and makes the authorization URL; `extra` parameters are
    /// added to it (`mobilePayload`, `prompt`, …).
    public static func start(
        provider: OIDCProvider,
        clientID: String,
        scope: String = "openid",
        extra: [String: String] = [:]
    ) async throws -> OIDCNativeAuthorization {
        let verifier = Base64URL(Array(systemRandomBytes(32))).text
        let state = Base64URL(Array(systemRandomBytes(16))).text
        let redirect = try await LoopbackRedirect.start(state: state)
        let nonce = Base64URL(Array(systemRandomBytes(16))).text
        var c = URLComponents(url: provider.authorizationEndpoint, resolvingAgainstBaseURL: false) ?? URLComponents()
        var query: [String: String] = [
            "client_id": clientID, "redirect_uri": redirect.uri, "response_type": "code", "scope": scope,
            "state": state, "nonce": nonce, "code_challenge_method": "S256",
            "code_challenge": Base64URL(Array(SHA256.hash(data: Array(verifier.utf8)))).text,
        ]
        for (k, v) in extra { query[k] = v }
        c.percentEncodedQuery = OIDCProvider.formEncoded(query)
        guard let url = c.url else {
            await redirect.close()
            throw OIDCPairingError.discovery("the authorization endpoint is not a URL")
        }
        return OIDCNativeAuthorization(
            provider: provider,
            clientID: clientID,
            nonce: nonce,
            url: url,
            state: state,
            verifier: verifier,
            redirect: redirect
        )
    }

    private init(
        provider: OIDCProvider,
        clientID: String,
        nonce: String,
        url: URL,
        state: String,
        verifier: String,
        redirect: LoopbackRedirect
    ) {
        self.provider = provider
        self.clientID = clientID
        self.nonce = nonce
        self.url = url
        self.state = state
        self.verifier = verifier
        self.redirect = redirect
    }

    /// Waits for the browser to come back (at most `timeout`), checks the answer and exchanges its code.
    public func tokens(timeout: Duration) async throws -> OIDCTokenResponse {
        defer { Task { await redirect.close() } }
        let q = try await redirect.parameters(timeout: timeout)
        guard q["state"] == state else {
            throw OIDCPairingError.mismatchedRedirect("its state is not this request's")
        }
        // RFC 9207: this provider says it sends `iss` (as Countersign does): it must, and its own.
        guard let iss = q["iss"], iss == provider.issuer else {
            throw OIDCPairingError.mismatchedRedirect("it does not come from \(provider.issuer) (iss)")
        }
        if let error = q["error"] {
            throw OIDCPairingError.authorization(error: error, description: q["error_description"] ?? "")
        }
        guard let code = q["code"] else {
            throw OIDCPairingError.authorization(error: "invalid_request", description: "the redirect has no code")
        }
        let body = try await OIDCProvider.fetch(
            provider.tokenEndpoint.absoluteString,
            form: [
                "grant_type": "authorization_code", "code": code, "redirect_uri": redirect.uri,
                "client_id": clientID, "code_verifier": verifier,
            ]
        )
        guard let tokens = try? JSONDecoder().decode(OIDCTokenResponse.self, from: Data(body)) else {
            throw OIDCPairingError.idToken("the token endpoint's answer is not a token response")
        }
        return tokens
    }

    /// Stops listening (when the flow is abandoned before `tokens`).
    public func cancel() async { await redirect.close() }
}

/// Fresh bytes from the system's generator (CountersignCrypto's `RandomNumberGenerator.bytes`).
func systemRandomBytes(_ n: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    return generator.bytes(n)
}

/// PingOne's `PairingObject`: a pairing grant checked, that pairs only when approved.
public struct PairingObject: Sendable {
    /// The account the authenticator will be paired with.
    public let username: String
    /// The server (the provider's issuer).
    public let server: URL
    /// This device's name as it will be listed.
    public let deviceName: String
    /// The fingerprint of the key to be paired.
    public let fingerprint: String
    public let expiresAt: Date
    let grant: String
    let identity: Identity

    /// Pairs this device (PingOne's `approve`): the grant with a signature by the key the payload named.
    public func approve() async throws -> (CountersignAuthenticator, PairingInfo) {
        try await CountersignAuthenticator.pair(
            normalizedKey: grant,
            serverURL: server,
            name: deviceName,
            identity: identity
        )
    }

    /// Declines (PingOne's `deny`): the grant is spent, nothing is paired.
    public func deny() async throws {
        try await CountersignClient(server: server).send(
            "POST",
            "/v1/authenticators/refusals",
            body: PairingRefusal(pairingKey: grant)
        )
    }
}

extension CountersignAuthenticator {
    /// PingOne's `generateMobilePayload()`: a payload, valid five minutes, that names this device's new key
    /// (`identity`) and proves it holds it, for one provider (`issuer`, exactly as its metadata says) and one
    /// client. Sent as the `mobilePayload` parameter of an authorization request, it makes the ID token carry
    /// a pairing grant for this key (docs/PROTOCOL.md §6.11).
    public static func generateMobilePayload(
        identity: Identity,
        issuer: String,
        clientID: String,
        now: Date = Date()
    ) throws -> String {
        let issuedAt = Int64(now.timeIntervalSince1970)
        let nonce = systemRandomBytes(MobilePayload.nonceLength)
        let message = DeviceProof.mobilePayloadMessage(
            signingKey: identity.publicKey,
            issuedAt: issuedAt,
            nonce: nonce,
            issuer: issuer,
            clientID: clientID
        )
        return MobilePayload(
            signingKey: Base64URL(identity.publicKey.spkiDER),
            issuedAt: issuedAt,
            nonce: Base64URL(nonce),
            signature: Base64URL(try identity.signature(for: message))
        ).text
    }

    struct IDTokenClaims: Codable, Sendable {
        var iss: String
        var aud: AudienceClaim
        var azp: String?
        var exp: Double
        var iat: Double?
        var nonce: String?
        var pairing: OIDCPairingClaim?
        enum CodingKeys: String, CodingKey {
            case iss, aud, azp, exp, iat, nonce
            case pairing = "urn:countersign:pairing"
        }
    }

    /// PingOne's `processIdToken(_:)`: checks the ID token (its signature against the provider's JWKS, the
    /// issuer, the audience, expiry, the nonce) and its pairing grant (for `payload` and `identity`'s key),
    /// and returns what would be paired; nothing is paired until `PairingObject.approve()`.
    public static func processIdToken(
        _ idToken: String,
        provider: OIDCProvider,
        clientID: String,
        nonce: String,
        payload: String,
        identity: Identity,
        name: String,
        now: Date = Date()
    ) async throws -> PairingObject {
        let keys = try await provider.keys()
        let claims: IDTokenClaims
        do {
            claims = try await keys.verify(idToken, as: ClaimsPayload<IDTokenClaims>.self).claims
        } catch {
            throw OIDCPairingError.idToken("its signature does not verify with the provider's published keys")
        }
        guard claims.iss == provider.issuer else {
            throw OIDCPairingError.idToken("it was issued by \(claims.iss), not \(provider.issuer)")
        }
        guard claims.aud.value.contains(clientID), claims.aud.value.count == 1 || claims.azp == clientID,
            claims.azp.map({ $0 == clientID }) ?? true
        else {
            throw OIDCPairingError.idToken("it is for \(claims.aud.value.joined(separator: ", ")), not \(clientID)")
        }
        guard now.timeIntervalSince1970 < claims.exp else { throw OIDCPairingError.idToken("it expired") }
        guard let got = claims.nonce, ConstantTime.equal(Array(got.utf8), Array(nonce.utf8)) else {
            throw OIDCPairingError.idToken("its nonce is not this request's")
        }
        guard let pairing = claims.pairing else { throw OIDCPairingError.noPairingGrant }
        let payloadHash = Array(SHA256.hash(data: Array(payload.utf8)))
        let keyHash = Array(SHA256.hash(data: identity.publicKey.spkiDER))
        guard ConstantTime.equal(pairing.payload.bytes, payloadHash), ConstantTime.equal(pairing.key.bytes, keyHash)
        else { throw OIDCPairingError.otherPayload }
        let expiresAt = Date(timeIntervalSince1970: TimeInterval(pairing.exp))
        guard now < expiresAt else { throw OIDCPairingError.expired }
        guard let server = URL(string: provider.issuer) else { throw OIDCPairingError.discovery("bad issuer") }
        return PairingObject(
            username: pairing.username,
            server: server,
            deviceName: name,
            fingerprint: identity.publicKey.fingerprint.description,
            expiresAt: expiresAt,
            grant: pairing.grant,
            identity: identity
        )
    }
}
