import CArgon2
import CSodium

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Argon2id password hashes as PHC strings (`$argon2id$v=19$m=…,t=…,p=…$salt$hash`). Made and checked by
/// libsodium, whose Argon2id picks SSE/AVX code at run time; libargon2 (the reference implementation, a
/// scalar build in Debian) makes hashes with p > 1, which libsodium cannot, and is the peer the tests and
/// `scripts/bench-argon2.sh` compare with. The two give the same bytes for the same inputs.
public struct PasswordHasher: Equatable, Sendable {
    /// Memory in KiB, passes, lanes. The default is OWASP's: m = 19 MiB, t = 2, p = 1.
    public var memoryKiB: Int
    public var iterations: Int
    public var parallelism: Int
    public static let owasp = PasswordHasher(memoryKiB: 19 * 1024, iterations: 2, parallelism: 1)
    static let saltLength = 16
    static let hashLength = 32

    public init(memoryKiB: Int, iterations: Int, parallelism: Int) {
        self.memoryKiB = memoryKiB
        self.iterations = iterations
        self.parallelism = parallelism
    }

    /// Which library computes a hash.
    public enum Implementation: Sendable, CaseIterable {
        /// libsodium's `crypto_pwhash` (p = 1 only): the one in use.
        case libsodium
        /// libargon2, the reference implementation.
        case reference
    }

    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// The stored string is not an Argon2id PHC string we accept.
        case malformedHash(String)
        /// The library refused (names its message).
        case library(String)
        public var description: String {
            switch self {
            case .malformedHash(let why): return "malformed password hash: \(why)"
            case .library(let why): return "argon2: \(why)"
            }
        }
    }

    /// sodium_init() chooses the fastest Argon2 code for this CPU and must run once before any use.
    private static let sodiumReady: Bool = sodium_init() >= 0

    /// A fresh PHC string for `password`, salted from `rng`. CPU-heavy (~15 ms with the default):
    /// servers call it off the event loops and the cooperative pool.
    public func hash<R: RandomNumberGenerator>(
        _ password: [UInt8],
        using rng: inout R,
        implementation: Implementation = .libsodium
    ) throws -> String {
        let salt = rng.bytes(Self.saltLength)
        // libsodium computes p = 1 only: wider hashes (never the default) are the reference library's.
        let tag = try rawHash(password, salt: salt, implementation: parallelism == 1 ? implementation : .reference)
        return
            "$argon2id$v=19$m=\(memoryKiB),t=\(iterations),p=\(parallelism)$\(Self.phcBase64(salt))$\(Self.phcBase64(tag))"
    }

    public func hash(_ password: [UInt8], implementation: Implementation = .libsodium) throws -> String {
        var rng = SystemRandomNumberGenerator()
        return try hash(password, using: &rng, implementation: implementation)
    }

    /// The 32-byte Argon2id tag of `password` under `salt` with these parameters.
    func rawHash(_ password: [UInt8], salt: [UInt8], implementation: Implementation) throws -> [UInt8] {
        var tag = [UInt8](repeating: 0, count: Self.hashLength)
        switch implementation {
        case .libsodium:
            guard parallelism == 1 else { throw Failure.library("libsodium computes Argon2id with p = 1 only") }
            guard Self.sodiumReady, salt.count == Int(crypto_pwhash_SALTBYTES) else {
                throw Failure.library("libsodium needs a \(crypto_pwhash_SALTBYTES)-byte salt")
            }
            let (opsLimit, memLimit) = (UInt64(iterations), memoryKiB * 1024)
            let rc = Self.withCChars(password) {
                crypto_pwhash(
                    &tag,
                    UInt64(tag.count),
                    $0,
                    UInt64(password.count),
                    salt,
                    opsLimit,
                    memLimit,
                    crypto_pwhash_ALG_ARGON2ID13
                )
            }
            // libsodium says only -1: the parameters are outside its range, or memory ran out.
            guard rc == 0 else { throw Failure.library("libsodium refused m=\(memoryKiB) KiB, t=\(iterations)") }
        case .reference:
            let rc = argon2id_hash_raw(
                UInt32(iterations),
                UInt32(memoryKiB),
                UInt32(parallelism),
                password,
                password.count,
                salt,
                salt.count,
                &tag,
                tag.count
            )
            guard rc == ARGON2_OK.rawValue else { throw Failure.library(String(cString: argon2_error_message(rc))) }
        }
        return tag
    }

    /// True when `password` matches (libsodium's check, which compares in constant time). Refuses
    /// anything but Argon2id v=19 with m ≤ 1 GiB, t ≤ 64, p ≤ 16, a salt of 8–64 bytes and a hash of
    /// 16–64 bytes, so a planted hash cannot make a sign-in allocate without bound.
    public static func verify(_ password: [UInt8], against phc: String) throws -> Bool {
        let stored = try parameters(of: phc)
        guard stored.memoryKiB <= 1 << 20, stored.iterations <= 64, stored.parallelism <= 16 else {
            throw Failure.malformedHash("parameters beyond m=1 GiB, t=64, p=16")
        }
        let parts = phc.split(separator: "$", omittingEmptySubsequences: false)
        guard let salt = phcBytes(parts[4]), (8...64).contains(salt.count) else {
            throw Failure.malformedHash("the salt is not 8 to 64 bytes of unpadded base64")
        }
        guard let tag = phcBytes(parts[5]), (16...64).contains(tag.count) else {
            throw Failure.malformedHash("the hash is not 16 to 64 bytes of unpadded base64")
        }
        guard sodiumReady else { throw Failure.library("libsodium could not start") }
        // -1 is all libsodium says; the string was checked above, so it is a wrong password (or no memory).
        return withCChars(password) { crypto_pwhash_str_verify(phc, $0, UInt64(password.count)) } == 0
    }

    /// `bytes` as the `const char *` libsodium takes (its length is passed beside it); an empty password
    /// still has an address.
    private static func withCChars<T>(_ bytes: [UInt8], _ body: (UnsafePointer<CChar>) -> T) -> T {
        (bytes.isEmpty ? [0] : bytes).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
        }
    }

    /// PHC's base64: the standard alphabet without padding.
    static func phcBase64(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.last == "=" { text.removeLast() }
        return text
    }

    /// Bytes of PHC base64, or nil (padding, other alphabets and non-canonical trailing bits refused).
    static func phcBytes(_ text: Substring) -> [UInt8]? {
        guard !text.contains("="), text.count % 4 != 1 else { return nil }
        let padded = String(text) + String(repeating: "=", count: (4 - text.count % 4) % 4)
        guard let data = Data(base64Encoded: padded), phcBase64(Array(data)) == text else { return nil }
        return Array(data)
    }

    /// True when `phc` was made with weaker parameters than these (or is not Argon2id).
    public func needsRehash(_ phc: String) -> Bool {
        guard let p = try? Self.parameters(of: phc) else { return true }
        return p.memoryKiB < memoryKiB || p.iterations < iterations || p.parallelism < parallelism
    }

    /// The parameters of an Argon2id v=19 PHC string.
    public static func parameters(of phc: String) throws -> PasswordHasher {
        let parts = phc.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0].isEmpty, parts[1] == "argon2id" else {
            throw Failure.malformedHash("not $argon2id$…")
        }
        guard parts[2] == "v=19" else { throw Failure.malformedHash("version must be v=19") }
        // Exactly `m=…,t=…,p=…`, in that order, as every Argon2 library writes them (and libsodium reads
        // them: another order would be read as a wrong password rather than refused here).
        let pairs = parts[3].split(separator: ",", omittingEmptySubsequences: false).map {
            $0.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        }
        guard pairs.count == 3, pairs.map({ $0.first.map(String.init) ?? "" }) == ["m", "t", "p"] else {
            throw Failure.malformedHash("parameters must be m, t and p, in that order")
        }
        let values = try pairs.map { pair -> Int in
            guard pair.count == 2, let n = Int(pair[1]), String(n) == pair[1], n > 0 else {
                throw Failure.malformedHash("bad parameter \(pair.joined(separator: "="))")
            }
            return n
        }
        let (m, t, p) = (values[0], values[1], values[2])
        // Argon2 needs 8 KiB of memory per lane at least.
        guard m >= 8 * p else { throw Failure.malformedHash("m must be at least 8 KiB per lane") }
        return PasswordHasher(memoryKiB: m, iterations: t, parallelism: p)
    }

    /// Raw Argon2id with a secret and associated data (RFC 9106 §5.3), for the known-answer test.
    static func rawArgon2id(
        password: [UInt8],
        salt: [UInt8],
        secret: [UInt8],
        associatedData: [UInt8],
        memoryKiB: Int,
        iterations: Int,
        parallelism: Int,
        length: Int
    ) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        var pwd = password
        var slt = salt
        var sec = secret
        var ad = associatedData
        let rc = out.withUnsafeMutableBufferPointer { o in
            pwd.withUnsafeMutableBufferPointer { p in
                slt.withUnsafeMutableBufferPointer { s in
                    sec.withUnsafeMutableBufferPointer { k in
                        ad.withUnsafeMutableBufferPointer { x in
                            var ctx = argon2_context()
                            ctx.out = o.baseAddress
                            ctx.outlen = UInt32(length)
                            ctx.pwd = p.baseAddress
                            ctx.pwdlen = UInt32(p.count)
                            ctx.salt = s.baseAddress
                            ctx.saltlen = UInt32(s.count)
                            ctx.secret = k.baseAddress
                            ctx.secretlen = UInt32(k.count)
                            ctx.ad = x.baseAddress
                            ctx.adlen = UInt32(x.count)
                            ctx.t_cost = UInt32(iterations)
                            ctx.m_cost = UInt32(memoryKiB)
                            ctx.lanes = UInt32(parallelism)
                            ctx.threads = UInt32(parallelism)
                            ctx.version = UInt32(ARGON2_VERSION_13.rawValue)
                            ctx.flags = 0  // ARGON2_DEFAULT_FLAGS
                            return argon2_ctx(&ctx, Argon2_id)
                        }
                    }
                }
            }
        }
        guard rc == ARGON2_OK.rawValue else { throw Failure.library(String(cString: argon2_error_message(rc))) }
        return out
    }
}
