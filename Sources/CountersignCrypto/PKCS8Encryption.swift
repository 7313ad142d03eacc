import Crypto
import CryptoExtras

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// PKCS#8 EncryptedPrivateKeyInfo with PBES2 (RFC 8018), the form `openssl pkey` reads (docs/SPEC.md §2.2).
enum PKCS8Encryption {
    /// scrypt N = 2^14, r = 8: 16 MiB, the most OpenSSL 3 accepts without raising its memory limit.
    static let scryptN = 1 << 14
    static let scryptR = 8
    static let scryptP = 1
    /// Bounds on what a hostile key file may make us compute.
    static let maxScryptN = 1 << 20
    static let maxPBKDF2Iterations = 10_000_000
    /// scrypt needs 128·r·N bytes; 256 MiB admits age's N = 2^18, r = 8 and refuses a key file that asks for gigabytes.
    static let maxScryptMemory = 256 << 20

    static func encrypt<R: RandomNumberGenerator>(
        _ pkcs8: [UInt8],
        passphrase: [UInt8],
        using rng: inout R
    ) throws -> [UInt8] {
        let salt = rng.bytes(16)
        let iv = rng.bytes(16)
        let key = try KDF.Scrypt.deriveKey(
            from: passphrase,
            salt: salt,
            outputByteCount: 32,
            rounds: scryptN,
            blockSize: scryptR,
            parallelism: scryptP
        )
        let ct = try AES._CBC.encrypt(pkcs8, using: key, iv: AES._CBC.IV(ivBytes: iv))
        let kdf = DER.sequence(
            DER.encode(DER.oid, OID.scrypt),
            DER.sequence(
                DER.encode(DER.octetString, salt),
                DER.integer(scryptN),
                DER.integer(scryptR),
                DER.integer(scryptP),
                DER.integer(32)
            )
        )
        let scheme = DER.sequence(DER.encode(DER.oid, OID.aes256CBC), DER.encode(DER.octetString, iv))
        let alg = DER.sequence(DER.encode(DER.oid, OID.pbes2), DER.sequence(kdf, scheme))
        return DER.sequence(alg, DER.encode(DER.octetString, Array(ct)))
    }

    /// `maxScryptMemoryBytes` and `maxIterations` default to the bounds above, and can only lower them (the fuzz
    /// targets do).
    static func decrypt(
        _ der: [UInt8],
        passphrase: [UInt8],
        maxScryptMemoryBytes: Int = maxScryptMemory,
        maxIterations: Int = maxPBKDF2Iterations
    ) throws -> [UInt8] {
        let key: SymmetricKey
        let iv: [UInt8]
        let ct: [UInt8]
        do {
            var outer = DER.Reader(der)
            var epki = try outer.enter(DER.sequence)
            try outer.expectEnd()
            var alg = try epki.enter(DER.sequence)
            guard try alg.readOID() == OID.pbes2 else {
                throw KeyError.unsupportedEncryption("not PBES2 (legacy PKCS#5 v1 or PKCS#12 schemes are refused)")
            }
            var params = try alg.enter(DER.sequence)
            try alg.expectEnd()
            var kdf = try params.enter(DER.sequence)
            var scheme = try params.enter(DER.sequence)
            try params.expectEnd()

            let schemeOID = try scheme.readOID()
            let keyLength: Int
            switch schemeOID {
            case OID.aes256CBC: keyLength = 32
            case OID.aes128CBC: keyLength = 16
            default: throw KeyError.unsupportedEncryption("cipher other than AES-128-CBC or AES-256-CBC")
            }
            iv = try scheme.read(DER.octetString)
            try scheme.expectEnd()
            guard iv.count == 16 else { throw KeyError.malformedKey("AES-CBC IV is not 16 bytes") }
            ct = try epki.read(DER.octetString)
            try epki.expectEnd()

            let kdfOID = try kdf.readOID()
            var kp = try kdf.enter(DER.sequence)
            try kdf.expectEnd()
            let salt = try kp.read(DER.octetString)
            switch kdfOID {
            case OID.scrypt:
                let n = try kp.readInt()
                let r = try kp.readInt()
                let p = try kp.readInt()
                if !kp.isAtEnd {
                    guard try kp.readInt() == keyLength else {
                        throw KeyError.malformedKey("scrypt key length does not match the cipher")
                    }
                }
                try kp.expectEnd()
                guard n > 1, n & (n - 1) == 0, n <= maxScryptN, r >= 1, r <= 32, p >= 1, p <= 16,
                    128 * r * n <= min(maxScryptMemoryBytes, maxScryptMemory)
                else {
                    throw KeyError.unsupportedEncryption(
                        "scrypt parameters N=\(n) r=\(r) p=\(p) are out of the accepted range"
                    )
                }
                key = try KDF.Scrypt.deriveKey(
                    from: passphrase,
                    salt: salt,
                    outputByteCount: keyLength,
                    rounds: n,
                    blockSize: r,
                    parallelism: p
                )
            case OID.pbkdf2:
                let iterations = try kp.readInt()
                if kp.peekTag == DER.integer {
                    guard try kp.readInt() == keyLength else {
                        throw KeyError.malformedKey("PBKDF2 key length does not match the cipher")
                    }
                }
                var hash = KDF.Insecure.PBKDF2.HashFunction.insecureSHA1
                if !kp.isAtEnd {
                    var prf = try kp.enter(DER.sequence)
                    switch try prf.readOID() {
                    case OID.hmacWithSHA1: hash = .insecureSHA1
                    case OID.hmacWithSHA256: hash = .sha256
                    case OID.hmacWithSHA512: hash = .sha512
                    default: throw KeyError.unsupportedEncryption("PBKDF2 with an unsupported PRF")
                    }
                    if !prf.isAtEnd { try prf.readNull() }
                    try prf.expectEnd()
                }
                try kp.expectEnd()
                guard iterations >= 1, iterations <= min(maxIterations, maxPBKDF2Iterations) else {
                    throw KeyError.unsupportedEncryption("PBKDF2 iteration count \(iterations) is out of range")
                }
                key = try KDF.Insecure.PBKDF2.deriveKey(
                    from: passphrase,
                    salt: salt,
                    using: hash,
                    outputByteCount: keyLength,
                    unsafeUncheckedRounds: iterations
                )
            default:
                throw KeyError.unsupportedEncryption("key derivation other than scrypt or PBKDF2")
            }
        } catch let e as DER.Error {
            throw KeyError.malformedKey("EncryptedPrivateKeyInfo: \(e.why)")
        }
        guard !ct.isEmpty, ct.count % 16 == 0 else {
            throw KeyError.malformedKey("encrypted key length is not a multiple of 16")
        }
        do {
            return Array(try AES._CBC.decrypt(ct, using: key, iv: AES._CBC.IV(ivBytes: iv)))
        } catch {
            throw KeyError.wrongPassphrase
        }
    }
}
