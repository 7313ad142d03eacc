import Foundation

/// The `mobilePayload` an authenticator adds to an authorization request to be paired by OpenID Connect
/// (docs/PROTOCOL.md §6.11): its new signing key, when the payload was made, a nonce, and the key's
/// signature over the three, as `key.issuedAt.nonce.signature` (base64url, decimal seconds, base64url,
/// base64url).
public struct MobilePayload: Equatable, Sendable {
    /// How long a payload may be presented after it was made (and how far ahead its clock may be: a minute).
    public static let lifetime: TimeInterval = 300
    public static let nonceLength = 16

    /// SPKI DER of the authenticator's signing key.
    public var signingKey: Base64URL
    /// Whole seconds since 1970.
    public var issuedAt: Int64
    public var nonce: Base64URL
    /// `r || s` over `mobile_payload_message` (docs/PROTOCOL.md §6.11).
    public var signature: Base64URL

    public init(signingKey: Base64URL, issuedAt: Int64, nonce: Base64URL, signature: Base64URL) {
        self.signingKey = signingKey
        self.issuedAt = issuedAt
        self.nonce = nonce
        self.signature = signature
    }

    public var text: String { "\(signingKey.text).\(issuedAt).\(nonce.text).\(signature.text)" }

    /// Nil unless `text` has the four fields, each in its form and length (the key's and the signature's
    /// meaning are for the verifier).
    public init?(text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 4, parts[0].utf8.count <= 400, (1...12).contains(parts[1].utf8.count),
            parts[1].utf8.allSatisfy({ (0x30...0x39).contains($0) }), let issuedAt = Int64(parts[1]),
            // One spelling per payload: "0123" is not "123" (each spelling would be another payload).
            String(issuedAt) == parts[1],
            let key = Base64URL(text: parts[0]), let nonce = Base64URL(text: parts[2]),
            nonce.bytes.count == Self.nonceLength, let signature = Base64URL(text: parts[3]),
            signature.bytes.count == 64
        else { return nil }
        self.init(signingKey: key, issuedAt: issuedAt, nonce: nonce, signature: signature)
    }
}

/// The claim an ID token carries when its authorization request had a `mobilePayload` (docs/PROTOCOL.md
/// §6.11): a single-use pairing grant for the key the payload named.
public struct OIDCPairingClaim: Codable, Equatable, Sendable {
    /// The claim's name in the ID token.
    public static let name = "urn:countersign:pairing"
    /// `cso_pg_` and 43 base64url characters: presented as the pairing key, with a signature by `key`.
    public var grant: String
    /// SHA-256 of the payload's text.
    public var payload: Base64URL
    /// SHA-256 of the signing key's SPKI DER: the only key the grant pairs.
    public var key: Base64URL
    /// The account the authenticator will be paired with.
    public var username: String
    /// When the grant expires, in whole seconds since 1970.
    public var exp: Int64

    public init(grant: String, payload: Base64URL, key: Base64URL, username: String, exp: Int64) {
        self.grant = grant
        self.payload = payload
        self.key = key
        self.username = username
        self.exp = exp
    }
}

/// `POST /v1/authenticators/refusals`: a pairing grant (or key) declined by the device it was for.
public struct PairingRefusal: Codable, Sendable {
    public var pairingKey: String
    public init(pairingKey: String) { self.pairingKey = pairingKey }
}
