import Crypto
import Foundation

/// A Web Push message body: RFC 8291 message encryption in RFC 8188's `aes128gcm` content coding, one record
/// (docs/SPEC.md §15). The sender makes a fresh P-256 key and salt per message; only the browser whose
/// subscription keys (`p256dh`, `auth`) it was sealed to can open it, and the push service sees its length
/// alone, which `seal`'s padding fixes.
public enum WebPushMessage {
    /// The record size written in the header: more than any body sealed here.
    public static let recordSize: UInt32 = 4096
    /// The largest body a push service must accept (RFC 8030 §7.2): 4096 bytes, header included.
    public static let maxBody = 4096
    static let headerSize = 16 + 4 + 1 + 65
    static let tagSize = 16

    /// Why a body could not be made or opened. Closed.
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// `p256dh` is not an uncompressed P-256 point on the curve (65 bytes, 0x04 first).
        case invalidSubscriptionKey
        /// `auth` is not 16 bytes.
        case invalidAuthSecret
        /// The plaintext is longer than the padded size allows (or the padded size than a body may be).
        case tooLong(max: Int)
        /// The body is truncated, its header malformed, or its record not this coding's.
        case malformed(String)
        /// The record does not open with these keys (another subscription's, or altered).
        case notForThisSubscription

        public var description: String {
            switch self {
            case .invalidSubscriptionKey: "p256dh is not an uncompressed P-256 public key (65 bytes, 0x04 first)"
            case .invalidAuthSecret: "auth is not 16 bytes"
            case .tooLong(let max): "the message is longer than \(max) bytes"
            case .malformed(let why): "not an aes128gcm Web Push body: \(why)"
            case .notForThisSubscription: "the body does not open with this subscription's keys, or was altered"
            }
        }
    }

    /// 16 bytes from the system's generator.
    public static func freshSalt() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return generator.bytes(16)
    }

    /// The subscription's public key, checked: 65 bytes, uncompressed, on the curve.
    public static func subscriptionKey(_ p256dh: [UInt8]) throws(Failure) -> P256.KeyAgreement.PublicKey {
        guard p256dh.count == 65, p256dh.first == 0x04,
            let key = try? P256.KeyAgreement.PublicKey(x963Representation: p256dh)
        else { throw .invalidSubscriptionKey }
        return key
    }

    /// Seals `plaintext` to the subscription (`p256dh`, `auth`), padded so that every body sealed with the same
    /// `paddedSize` has the same length (`paddedSize` counts the plaintext and its padding). `ephemeral` and
    /// `salt` are fresh per message; they are parameters for the tests' vectors.
    public static func seal(
        _ plaintext: [UInt8],
        p256dh: [UInt8],
        auth: [UInt8],
        paddedSize: Int,
        ephemeral: P256.KeyAgreement.PrivateKey = P256.KeyAgreement.PrivateKey(),
        salt: [UInt8] = WebPushMessage.freshSalt()
    ) throws(Failure) -> [UInt8] {
        let receiver = try subscriptionKey(p256dh)
        guard auth.count == 16 else { throw .invalidAuthSecret }
        let limit = maxBody - headerSize - tagSize - 1
        guard paddedSize <= limit else { throw .tooLong(max: limit) }
        guard plaintext.count <= paddedSize else { throw .tooLong(max: paddedSize) }
        precondition(salt.count == 16, "a salt is 16 bytes")
        let senderPublic = Array(ephemeral.publicKey.x963Representation)
        guard let shared = try? ephemeral.sharedSecretFromKeyAgreement(with: receiver) else {
            throw .invalidSubscriptionKey
        }
        let (key, nonce) = keyAndNonce(
            shared: shared.withUnsafeBytes { Array($0) },
            auth: auth,
            receiverPublic: p256dh,
            senderPublic: senderPublic,
            salt: salt
        )
        // One record, the last: the delimiter 0x02, then zeros up to the padded size.
        let record = plaintext + [0x02] + [UInt8](repeating: 0, count: paddedSize - plaintext.count)
        guard let box = try? AES.GCM.seal(record, using: key, nonce: AES.GCM.Nonce(data: nonce)) else {
            throw .malformed("the record could not be sealed")
        }
        var header = salt
        header += withUnsafeBytes(of: recordSize.bigEndian) { Array($0) }
        header.append(UInt8(senderPublic.count))
        header += senderPublic
        return header + Array(box.ciphertext) + Array(box.tag)
    }

    /// Opens a body sealed to the subscription whose private key and `auth` are given (a browser's side; the
    /// tests' fake push service reads with Python's `http_ece`). Returns the plaintext without its padding.
    public static func open(
        _ body: [UInt8],
        privateKey: P256.KeyAgreement.PrivateKey,
        auth: [UInt8]
    ) throws(Failure) -> [UInt8] {
        guard auth.count == 16 else { throw .invalidAuthSecret }
        guard body.count >= 21 else { throw .malformed("shorter than its header") }
        let salt = Array(body[0..<16])
        let rs = body[16..<20].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let idLength = Int(body[20])
        guard idLength == 65, body.count >= 21 + idLength + tagSize + 1 else {
            throw .malformed("the sender's key is not a P-256 point, or the record is missing")
        }
        let senderPublic = Array(body[21..<(21 + idLength)])
        let sender = try subscriptionKey(senderPublic)
        let sealed = Array(body[(21 + idLength)...])
        // One record only: it fits in the record size the header names.
        guard rs >= 18, sealed.count <= Int(rs) else { throw .malformed("more than one record") }
        guard let shared = try? privateKey.sharedSecretFromKeyAgreement(with: sender) else {
            throw .notForThisSubscription
        }
        let (key, nonce) = keyAndNonce(
            shared: shared.withUnsafeBytes { Array($0) },
            auth: auth,
            receiverPublic: Array(privateKey.publicKey.x963Representation),
            senderPublic: senderPublic,
            salt: salt
        )
        guard
            let box = try? AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: nonce),
                ciphertext: sealed.dropLast(tagSize),
                tag: sealed.suffix(tagSize)
            ),
            let record = try? AES.GCM.open(box, using: key)
        else { throw .notForThisSubscription }
        // The padding is zeros after the last record's 0x02 delimiter (RFC 8188 §2).
        guard let delimiter = record.lastIndex(where: { $0 != 0 }), record[delimiter] == 0x02 else {
            throw .malformed("the record's padding has no last-record delimiter")
        }
        return Array(record[..<delimiter])
    }

    /// RFC 8291 §3.3-3.4 and RFC 8188 §2.2-2.3: the content-encryption key and the record's nonce.
    static func keyAndNonce(
        shared: [UInt8],
        auth: [UInt8],
        receiverPublic: [UInt8],
        senderPublic: [UInt8],
        salt: [UInt8]
    ) -> (SymmetricKey, [UInt8]) {
        let keyInfo = Array("WebPush: info".utf8) + [0] + receiverPublic + senderPublic
        let ikm = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: shared),
            salt: auth,
            info: keyInfo,
            outputByteCount: 32
        )
        let cek = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: ikm,
            salt: salt,
            info: Array("Content-Encoding: aes128gcm".utf8) + [0],
            outputByteCount: 16
        )
        let nonce = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: ikm,
            salt: salt,
            info: Array("Content-Encoding: nonce".utf8) + [0],
            outputByteCount: 12
        )
        return (cek, nonce.withUnsafeBytes { Array($0) })
    }
}
