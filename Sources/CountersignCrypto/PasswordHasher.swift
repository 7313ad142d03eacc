import CArgon2
import Foundation

/// Argon2id password hashes as PHC strings (`$argon2id$v=19$m=…,t=…,p=…$salt$hash`), computed by
/// libargon2. Verification is libargon2's, which compares in constant time.
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

    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// The stored string is not an Argon2id PHC string we accept.
        case malformedHash(String)
        /// libargon2 refused (names its message).
        case library(String)
        public var description: String {
            switch self {
            case .malformedHash(let why): return "malformed password hash: \(why)"
            case .library(let why): return "argon2: \(why)"
            }
        }
    }

    /// A fresh PHC string for `password`, salted from `rng`. CPU-heavy (~17 ms with the default):
    /// servers call it off the cooperative pool.
    public func hash<R: RandomNumberGenerator>(_ password: [UInt8], using rng: inout R) throws -> String {
        let salt = rng.bytes(Self.saltLength)
        let length = argon2_encodedlen(
            UInt32(iterations),
            UInt32(memoryKiB),
            UInt32(parallelism),
            UInt32(Self.saltLength),
            UInt32(Self.hashLength),
            Argon2_id
        )
        var encoded = [CChar](repeating: 0, count: length)
        let rc = argon2id_hash_encoded(
            UInt32(iterations),
            UInt32(memoryKiB),
            UInt32(parallelism),
            password,
            password.count,
            salt,
            salt.count,
            Self.hashLength,
            &encoded,
            length
        )
        guard rc == ARGON2_OK.rawValue else { throw Failure.library(String(cString: argon2_error_message(rc))) }
        return String(decoding: encoded.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public func hash(_ password: [UInt8]) throws -> String {
        var rng = SystemRandomNumberGenerator()
        return try hash(password, using: &rng)
    }

    /// True when `password` matches. Refuses anything but Argon2id v=19 with m ≤ 1 GiB, t ≤ 64, p ≤ 16,
    /// so a planted hash cannot make a sign-in allocate without bound.
    public static func verify(_ password: [UInt8], against phc: String) throws -> Bool {
        let stored = try parameters(of: phc)
        guard stored.memoryKiB <= 1 << 20, stored.iterations <= 64, stored.parallelism <= 16 else {
            throw Failure.malformedHash("parameters beyond m=1 GiB, t=64, p=16")
        }
        let rc = argon2id_verify(phc, password, password.count)
        if rc == ARGON2_OK.rawValue { return true }
        if rc == ARGON2_VERIFY_MISMATCH.rawValue { return false }
        throw Failure.library(String(cString: argon2_error_message(rc)))
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
        var values: [String: Int] = [:]
        for kv in parts[3].split(separator: ",") {
            let pair = kv.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, let n = Int(pair[1]), String(n) == pair[1], n > 0 else {
                throw Failure.malformedHash("bad parameter \(kv)")
            }
            values[String(pair[0])] = n
        }
        guard let m = values["m"], let t = values["t"], let p = values["p"], values.count == 3 else {
            throw Failure.malformedHash("parameters must be m, t and p")
        }
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
