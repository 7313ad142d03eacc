import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// FileLock's package: four big-endian length-prefixed chunks (docs/SPEC.md §3). One GCM message, so it
/// is built and read in memory, up to `maxPlaintext`.
public enum FileLockPackage {
    /// 256 MiB: above this the user is told to use the streaming format.
    public static let maxPlaintext = 256 << 20
    public static let wrappedKeyLength = 113

    /// Seals `plaintext` to `recipient` with fresh system randomness.
    public static func seal(_ plaintext: [UInt8], to recipient: PublicKey) throws -> [UInt8] {
        var rng = SystemRandomNumberGenerator()
        return try seal(plaintext, to: recipient, using: &rng)
    }

    /// Package-only: the file key, nonce and ephemeral key all come from `rng`, so a replayed generator
    /// would reuse a GCM key and nonce; tests and the vector generator pin it.
    package static func seal<R: RandomNumberGenerator>(
        _ plaintext: [UInt8],
        to recipient: PublicKey,
        using rng: inout R
    ) throws -> [UInt8] {
        guard plaintext.count <= maxPlaintext else { throw SealError.tooLarge(limit: maxPlaintext) }
        let fileKey = rng.bytes(32)
        let nonce = rng.bytes(12)
        let ephemeral = P256Scalar.keyAgreementKey(using: &rng)
        let wrapped = try AppleECIES.seal(fileKey, to: recipient, hash: SHA256.self, ephemeral: ephemeral)
        let box = try AES.GCM.seal(plaintext, using: SymmetricKey(data: fileKey), nonce: AES.GCM.Nonce(data: nonce))
        var out: [UInt8] = []
        out.reserveCapacity(plaintext.count + 157)
        for chunk in [wrapped, nonce, Array(box.ciphertext), Array(box.tag)] {
            withUnsafeBytes(of: UInt32(chunk.count).bigEndian) { out.append(contentsOf: $0) }
            out += chunk
        }
        return out
    }

    public static func open(_ package: [UInt8], with identity: Identity) throws -> [UInt8] {
        var chunks: [ArraySlice<UInt8>] = []
        var i = 0
        for (n, expected) in [wrappedKeyLength, 12, nil, 16].enumerated() {
            guard package.count - i >= 4 else { throw SealError.malformed("missing length header for chunk \(n + 1)") }
            let len = package[i..<i + 4].reduce(0) { $0 << 8 | Int($1) }
            i += 4
            if let expected, len != expected {
                throw SealError.malformed("chunk \(n + 1) is \(len) bytes, expected \(expected)")
            }
            if expected == nil, len > maxPlaintext { throw SealError.tooLarge(limit: maxPlaintext) }
            guard package.count - i >= len else {
                throw SealError.malformed(
                    "chunk length mismatch: chunk \(n + 1) wants \(len) bytes, \(package.count - i) remain"
                )
            }
            chunks.append(package[i..<i + len])
            i += len
        }
        guard i == package.count else { throw SealError.malformed("\(package.count - i) trailing bytes after the tag") }
        let fileKey: [UInt8]?
        do {
            fileKey = try AppleECIES.open(Array(chunks[0]), with: identity, hash: SHA256.self)
        } catch {
            throw SealError.header("the wrapped key's ephemeral point is invalid")
        }
        guard let fileKey, fileKey.count == 32 else {
            throw SealError.notForThisKey(sealedTo: [], yours: identity.publicKey.fingerprint)
        }
        do {
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: chunks[1]),
                ciphertext: chunks[2],
                tag: chunks[3]
            )
            return Array(try AES.GCM.open(box, using: SymmetricKey(data: fileKey)))
        } catch {
            throw SealError.tampered
        }
    }
}
