import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation
import Synchronization

/// PingOne's pairing by OpenID Connect (docs/PROTOCOL.md §6.11): an authorization request with a
/// `mobilePayload` makes the first ID token of its grant carry a single-use pairing grant for the key the
/// payload named. The grant itself is the MFA feature's (a pairing key bound to that key), opened through
/// `PairingGrantOpener`, given where the server is assembled.
extension OIDCService {
    /// What opening a pairing grant came to.
    public enum PairingOpening: Sendable, Equatable {
        case opened
        case payloadUsed
        case tooMany
        /// Nothing to open it with (the server is not assembled with the MFA feature).
        case unavailable
    }

    /// A payload checked: its signing key verified its signature and its time is within the window.
    struct CheckedPayload: Sendable {
        let payload: MobilePayload
        let key: PublicKey
    }

    /// The payload of `text` for `client`, or why it is refused (words for `invalid_request`).
    static func checkPayload(
        _ text: String,
        issuer: String,
        clientID: String,
        now: Date
    ) -> Result<CheckedPayload, OIDCError> {
        guard let payload = MobilePayload(text: text), let key = try? PublicKey(spki: payload.signingKey.bytes),
            // One spelling per key too: a compressed point re-encoded would be another payload's text.
            key.spkiDER == payload.signingKey.bytes,
            key.isValidSignature(
                payload.signature.bytes,
                for: DeviceProof.mobilePayloadMessage(
                    signingKey: key,
                    issuedAt: payload.issuedAt,
                    nonce: payload.nonce.bytes,
                    issuer: issuer,
                    clientID: clientID
                )
            )
        else {
            return .failure(
                OIDCError(
                    .invalidRequest,
                    "mobilePayload is not a payload signed by the key it names for this provider and client (docs/PROTOCOL.md §6.11): make a new one"
                )
            )
        }
        let age = now.timeIntervalSince1970 - TimeInterval(payload.issuedAt)
        guard age <= MobilePayload.lifetime, age >= -60 else {
            return .failure(
                OIDCError(
                    .invalidRequest,
                    age > 0
                        ? "mobilePayload expired (it lives \(Int(MobilePayload.lifetime / 60)) minutes): make a new one"
                        : "mobilePayload was made in the future: check the device's clock"
                )
            )
        }
        return .success(CheckedPayload(payload: payload, key: key))
    }

    /// Opens the pairing grant of `grant` (its request carried a payload), as the code is exchanged: the grant
    /// is then the code's only. Throws `invalid_grant` when it cannot be opened.
    func openPairing(_ grant: OIDCGrant, origin: RequestOrigin) async throws {
        guard let payload = grant.pairingPayload, let key = grant.pairingKey else { return }
        switch try await pairing(
            token: pairingGrant(grantID: grant.id),
            accountID: grant.accountID,
            payloadHash: payload,
            keyHash: key,
            origin: origin
        ) {
        case .opened:
            // Revoked meanwhile (the account's sessions all ended, the code reused): the pairing goes with it.
            guard try await store.oidcGrant(id: grant.id)?.revokedAt == nil else {
                try await pairing.spend(pairingGrant(grantID: grant.id))
                throw OIDCError(.invalidGrant, "the grant was revoked while its code was exchanged")
            }
            try await audit.record(grant.accountID, .oidcToken, .oidc("pairing-grant"), origin)
        case .payloadUsed:
            throw OIDCError(.invalidGrant, "this mobilePayload was used before: make a new one and start again")
        case .tooMany:
            throw OIDCError(
                .invalidGrant,
                "the account has as many open pairings as allowed: use one, or wait ten minutes"
            )
        case .unavailable:
            throw OIDCError(.serverError, "pairing is not available on this server now")
        }
    }

    /// The grant's pairing grant: derived from the grant's ID under a server key, so that the code exchange can
    /// put it in the ID token while the store keeps only its hash.
    func pairingGrant(grantID: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array("countersign/v1 pairing grant\u{0}\(grantID)".utf8),
            using: pairwiseKey
        )
        return "cso_pg_" + Base64URL(Array(Data(mac))).text
    }

    /// The claim of a grant's first ID token, when its request carried a payload.
    func pairingClaim(_ grant: OIDCGrant, username: String) -> OIDCPairingClaim? {
        guard let payload = grant.pairingPayload.flatMap({ Base64URL(text: $0) }),
            let key = grant.pairingKey.flatMap({ Base64URL(text: $0) })
        else { return nil }
        return OIDCPairingClaim(
            grant: pairingGrant(grantID: grant.id),
            payload: payload,
            key: key,
            username: username,
            exp: Int64(grant.createdAt.addingTimeInterval(Self.pairingGrantLifetime).timeIntervalSince1970)
        )
    }

    /// As a pairing key's (the MFA feature opens it with the same lifetime).
    static let pairingGrantLifetime: TimeInterval = 600
}

/// How the provider opens a pairing grant: the MFA feature's service, set once the server is assembled
/// (the provider is made before it, since sessions tell the provider when they end).
public final class PairingGrantOpener: Sendable {
    /// `payloadHash` and `keyHash` base64url of SHA-256 of the payload's text and of its key's SPKI DER.
    public typealias Open =
        @Sendable (
            _ token: String, _ accountID: String, _ payloadHash: String, _ keyHash: String, _ origin: RequestOrigin
        ) async throws -> OIDCService.PairingOpening
    public typealias Spend = @Sendable (_ token: String) async throws -> Void
    private let hooks = Mutex<(open: Open, spend: Spend)?>(nil)

    public init() {}

    func set(spend: @escaping Spend, open: @escaping Open) { hooks.withLock { $0 = (open, spend) } }

    func callAsFunction(
        token: String,
        accountID: String,
        payloadHash: String,
        keyHash: String,
        origin: RequestOrigin
    ) async throws -> OIDCService.PairingOpening {
        guard let open = hooks.withLock({ $0?.open }) else { return .unavailable }
        return try await open(token, accountID, payloadHash, keyHash, origin)
    }

    /// Takes back a grant just opened.
    func spend(_ token: String) async throws { try await hooks.withLock({ $0?.spend })?(token) }
}
