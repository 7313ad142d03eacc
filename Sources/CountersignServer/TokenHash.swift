import CountersignCrypto
import Crypto

/// How the server keeps a bearer secret it must recognise but never needs back (session tokens, push
/// tickets, pairing keys, QR bindings): the hex SHA-256 of its text. The secrets carry 256 random bits
/// (pairing keys: see `PairingKey`), so a fast hash suffices: a leaked table gives no usable secret.
enum TokenHash {
    static func hex(_ token: String) -> String { Hex.encode(SHA256.hash(data: Array(token.utf8))) }
}
