import CountersignAPI
import CountersignCrypto
import Crypto
import Foundation

/// A discoverable sign-in's ceremony, carried by the client instead of stored (issue 33). Anyone may start
/// one, so stored ones could be filled by a few hundred addresses and deny passkey sign-in to everyone. The
/// ID holds a nonce and the expiry under a MAC; the challenge is derived from both with the same key. The
/// server stores only a ceremony that is answered (`PasskeyStore.spendCeremony`), which keeps it answered
/// once, as the stored kinds are.
///
///     id        = "s1." || base64url(nonce[16] || expires_ms[8, big-endian] || tag[16])
///     tag       = HMAC-SHA-256(key, "countersign/v1 passkey sign-in" || 0x00 || nonce || expires_ms)[0..<16]
///     challenge = HMAC-SHA-256(key, "countersign/v1 passkey sign-in challenge" || 0x00 || nonce || expires_ms)
enum SignInCeremony {
    static let prefix = "s1."

    /// A new ceremony's ID and its challenge, valid for `PasskeyCeremony.lifetime` from `now`.
    static func make(key: SymmetricKey, now: Date, random: any RandomSource) -> PasskeyCeremony {
        let nonce = random.bytes(16)
        let expiresAt = Date(ms: now.addingTimeInterval(PasskeyCeremony.lifetime).ms)
        let body = nonce + bigEndian(expiresAt.ms)
        let id = prefix + Base64URL(body + Array(tag(key, body))).text
        return ceremony(id: id, key: key, body: body, expiresAt: expiresAt)
    }

    /// The ceremony `id` names if its MAC holds and it has not expired at `now`; nil for anything else
    /// (forged, cut, from another server, expired), with no hint which.
    static func open(_ id: String, key: SymmetricKey, now: Date) -> PasskeyCeremony? {
        guard id.hasPrefix(prefix), let bytes = Base64URL(text: String(id.dropFirst(prefix.count)))?.bytes,
            bytes.count == 40
        else { return nil }
        let body = Array(bytes[0..<24])
        guard ConstantTime.equal(Array(tag(key, body)), Array(bytes[24...])) else { return nil }
        let ms = body[16..<24].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        let expiresAt = Date(ms: ms)
        guard now < expiresAt else { return nil }
        return ceremony(id: id, key: key, body: body, expiresAt: expiresAt)
    }

    private static func ceremony(id: String, key: SymmetricKey, body: [UInt8], expiresAt: Date) -> PasskeyCeremony {
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: Array("countersign/v1 passkey sign-in challenge".utf8) + [0] + body)
        return PasskeyCeremony(
            id: id,
            kind: .signIn,
            challenge: Array(mac.finalize()),
            accountID: nil,
            boundTo: nil,
            expiresAt: expiresAt
        )
    }

    private static func tag(_ key: SymmetricKey, _ body: [UInt8]) -> ArraySlice<UInt8> {
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: Array("countersign/v1 passkey sign-in".utf8) + [0] + body)
        return Array(mac.finalize()).prefix(16)
    }

    private static func bigEndian(_ value: Int64) -> [UInt8] {
        (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
    }
}
