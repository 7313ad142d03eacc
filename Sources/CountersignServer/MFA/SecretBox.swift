import Crypto
import Foundation

/// TOTP secrets at rest: AES-256-GCM under a server key kept in `server_secrets`, so a copy of the
/// authenticators table alone yields no passcodes. The record's id is bound as associated data, so a
/// sealed secret moved to another row does not open.
struct SecretBox: Sendable {
    let key: SymmetricKey

    func seal(_ secret: [UInt8], for id: String) throws -> [UInt8] {
        Array(try AES.GCM.seal(secret, using: key, authenticating: Array(id.utf8)).combined!)
    }

    func open(_ sealed: [UInt8], for id: String) throws -> [UInt8] {
        Array(try AES.GCM.open(AES.GCM.SealedBox(combined: sealed), using: key, authenticating: Array(id.utf8)))
    }
}
