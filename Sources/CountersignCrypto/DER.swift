/// The little DER this package needs (SPKI, PKCS#8, PBES2), parsed strictly: definite minimal lengths,
/// no trailing bytes. Kept here rather than pulled in so that `CountersignCrypto` depends on swift-crypto
/// alone and every accepted encoding is visible in one screen.
enum DER {
    static let sequence: UInt8 = 0x30
    static let integer: UInt8 = 0x02
    static let bitString: UInt8 = 0x03
    static let octetString: UInt8 = 0x04
    static let null: UInt8 = 0x05
    static let oid: UInt8 = 0x06

    struct Error: Swift.Error { let why: String }

    /// A cursor over DER bytes.
    struct Reader {
        private let bytes: [UInt8]
        private var index: Int
        private let end: Int

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
            index = 0
            end = bytes.count
        }
        private init(_ bytes: [UInt8], from: Int, to: Int) {
            self.bytes = bytes
            index = from
            end = to
        }

        var isAtEnd: Bool { index == end }
        var peekTag: UInt8? { index < end ? bytes[index] : nil }

        /// Reads one element with the given tag and returns its contents.
        mutating func read(_ tag: UInt8) throws -> [UInt8] {
            let (from, to) = try element(tag)
            return Array(bytes[from..<to])
        }

        /// Reads one constructed element and returns a reader over its contents.
        mutating func enter(_ tag: UInt8) throws -> Reader {
            let (from, to) = try element(tag)
            return Reader(bytes, from: from, to: to)
        }

        /// The raw bytes (tag, length, contents) of the next element.
        mutating func readRaw(_ tag: UInt8) throws -> [UInt8] {
            let start = index
            _ = try element(tag)
            return Array(bytes[start..<index])
        }

        mutating func readOID() throws -> [UInt8] { try read(DER.oid) }

        /// A non-negative INTEGER that fits in an Int.
        mutating func readInt() throws -> Int {
            let v = try read(DER.integer)
            guard !v.isEmpty, v[0] & 0x80 == 0 else { throw Error(why: "negative or empty INTEGER") }
            guard v.count == 1 || v[0] != 0 || v[1] & 0x80 != 0 else { throw Error(why: "non-minimal INTEGER") }
            let digits = v.drop(while: { $0 == 0 })
            guard digits.count <= 7 else { throw Error(why: "INTEGER too large") }
            return digits.reduce(0) { $0 << 8 | Int($1) }
        }

        mutating func readNull() throws {
            guard try read(DER.null).isEmpty else { throw Error(why: "NULL with contents") }
        }

        func expectEnd() throws {
            guard isAtEnd else { throw Error(why: "trailing bytes") }
        }

        private mutating func element(_ tag: UInt8) throws -> (Int, Int) {
            guard index < end else { throw Error(why: "unexpected end of data") }
            guard bytes[index] == tag else {
                throw Error(why: "expected tag 0x\(String(tag, radix: 16)), found 0x\(String(bytes[index], radix: 16))")
            }
            index += 1
            guard index < end else { throw Error(why: "missing length") }
            let first = bytes[index]
            index += 1
            var length: Int
            if first < 0x80 {
                length = Int(first)
            } else {
                let n = Int(first & 0x7f)
                guard n >= 1, n <= 4, index + n <= end else { throw Error(why: "bad length") }
                length = 0
                for _ in 0..<n {
                    length = length << 8 | Int(bytes[index])
                    index += 1
                }
                guard length >= 0x80, length >> (8 * (n - 1)) != 0 else { throw Error(why: "non-minimal length") }
            }
            guard length <= end - index else { throw Error(why: "length beyond the data") }
            defer { index += length }
            return (index, index + length)
        }
    }

    static func encode(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [tag]
        let n = contents.count
        if n < 0x80 {
            out.append(UInt8(n))
        } else {
            var len: [UInt8] = []
            var v = n
            while v > 0 {
                len.insert(UInt8(v & 0xff), at: 0)
                v >>= 8
            }
            out.append(0x80 | UInt8(len.count))
            out += len
        }
        return out + contents
    }

    static func sequence(_ parts: [UInt8]...) -> [UInt8] { encode(sequence, parts.flatMap { $0 }) }

    static func integer(_ value: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var v = value
        repeat {
            bytes.insert(UInt8(v & 0xff), at: 0)
            v >>= 8
        } while v > 0
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return encode(integer, bytes)
    }
}

/// Object identifiers, as their DER contents.
enum OID {
    static let ecPublicKey: [UInt8] = [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01]  // 1.2.840.10045.2.1
    static let prime256v1: [UInt8] = [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]  // 1.2.840.10045.3.1.7
    static let secp384r1: [UInt8] = [0x2b, 0x81, 0x04, 0x00, 0x22]
    static let secp521r1: [UInt8] = [0x2b, 0x81, 0x04, 0x00, 0x23]
    static let secp256k1: [UInt8] = [0x2b, 0x81, 0x04, 0x00, 0x0a]
    static let rsaEncryption: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01]
    static let ed25519: [UInt8] = [0x2b, 0x65, 0x70]
    static let x25519: [UInt8] = [0x2b, 0x65, 0x6e]
    static let pbes2: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x05, 0x0d]
    static let pbkdf2: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x05, 0x0c]
    static let scrypt: [UInt8] = [0x2b, 0x06, 0x01, 0x04, 0x01, 0xda, 0x47, 0x04, 0x0b]  // 1.3.6.1.4.1.11591.4.11
    static let hmacWithSHA1: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x02, 0x07]
    static let hmacWithSHA256: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x02, 0x09]
    static let hmacWithSHA512: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x02, 0x0b]
    static let aes128CBC: [UInt8] = [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x01, 0x02]
    static let aes256CBC: [UInt8] = [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x01, 0x2a]

    static func name(ofKeyAlgorithm alg: [UInt8], curve: [UInt8]?) -> String {
        switch alg {
        case rsaEncryption: return "an RSA key"
        case ed25519: return "an Ed25519 key"
        case x25519: return "an X25519 key"
        case ecPublicKey:
            switch curve {
            case prime256v1?: return "a P-256 key"
            case secp384r1?: return "a P-384 key"
            case secp521r1?: return "a P-521 key"
            case secp256k1?: return "a secp256k1 key"
            default: return "an EC key on an unsupported curve"
            }
        default: return "a key of an unknown algorithm"
        }
    }

    /// What the AlgorithmIdentifier at the start of `reader` names, for error messages; nil if unreadable.
    private static func name(readingAlgorithmFrom reader: inout DER.Reader) -> String? {
        guard var alg = try? reader.enter(DER.sequence), let oid = try? alg.readOID() else { return nil }
        let curve = alg.peekTag == DER.oid ? try? alg.readOID() : nil
        return name(ofKeyAlgorithm: oid, curve: curve)
    }

    /// The key type a SubjectPublicKeyInfo holds, for error messages; nil if it is not one.
    static func name(ofSPKI der: [UInt8]) -> String? {
        var outer = DER.Reader(der)
        guard var spki = try? outer.enter(DER.sequence) else { return nil }
        return name(readingAlgorithmFrom: &spki)
    }

    /// The key type a PKCS#8 PrivateKeyInfo holds, for error messages; nil if it is not one.
    static func name(ofPKCS8 der: [UInt8]) -> String? {
        var outer = DER.Reader(der)
        guard var info = try? outer.enter(DER.sequence), (try? info.readInt()) != nil else { return nil }
        return name(readingAlgorithmFrom: &info)
    }
}
