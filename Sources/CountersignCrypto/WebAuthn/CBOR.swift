/// One CBOR data item of the subset in docs/SPEC.md §13.1: what attestation objects, COSE keys and
/// authenticator extensions use, and nothing that could be read two ways.
public indirect enum CBOR: Equatable, Sendable {
    case int(Int64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    /// Entries in the order they were encoded; keys are `.int` or `.text` and distinct.
    case map([Entry])
    case bool(Bool)
    case null

    public struct Entry: Equatable, Sendable {
        public var key: CBOR
        public var value: CBOR
        public init(_ key: CBOR, _ value: CBOR) {
            self.key = key
            self.value = value
        }
    }

    public static let maxSize = 65_536
    public static let maxDepth = 8
    public static let maxItems = 256

    /// Reads exactly one item that fills `bytes`.
    public init(decoding bytes: [UInt8]) throws(WebAuthnError) {
        var reader = Reader(bytes: bytes[...])
        self = try reader.item(depth: 0)
        guard reader.at == bytes.count else {
            throw .malformed("\(bytes.count - reader.at) bytes after the CBOR item")
        }
    }

    /// Reads one item at the start of `bytes` and says where it ended (for authenticator data, where a
    /// COSE key is followed by more).
    public static func decodePrefix(_ bytes: ArraySlice<UInt8>) throws(WebAuthnError) -> (CBOR, end: Int) {
        var reader = Reader(bytes: bytes)
        let item = try reader.item(depth: 0)
        return (item, reader.at)
    }

    public subscript(_ key: Int64) -> CBOR? { self[.int(key)] }
    public subscript(_ key: String) -> CBOR? { self[.text(key)] }
    private subscript(_ key: CBOR) -> CBOR? {
        guard case .map(let entries) = self else { return nil }
        return entries.first { $0.key == key }?.value
    }

    public var entries: [Entry]? {
        if case .map(let e) = self { e } else { nil }
    }
    public var byteString: [UInt8]? {
        if case .bytes(let b) = self { b } else { nil }
    }
    public var textString: String? {
        if case .text(let t) = self { t } else { nil }
    }
    public var integer: Int64? {
        if case .int(let i) = self { i } else { nil }
    }

    struct Reader {
        let bytes: ArraySlice<UInt8>
        var at: Int

        init(bytes: ArraySlice<UInt8>) {
            self.bytes = bytes
            at = bytes.startIndex
        }

        private mutating func take(_ n: Int) throws(WebAuthnError) -> ArraySlice<UInt8> {
            guard n >= 0, bytes.endIndex - at >= n else { throw .malformed("a CBOR length points past the end") }
            defer { at += n }
            return bytes[at..<at + n]
        }

        /// The argument of a head, in its shortest form only (RFC 8949 §4.2.1: one encoding per value).
        private mutating func argument(_ info: UInt8) throws(WebAuthnError) -> UInt64 {
            let width: Int
            switch info {
            case 0..<24: return UInt64(info)
            case 24: width = 1
            case 25: width = 2
            case 26: width = 4
            case 27: width = 8
            case 31: throw .malformed("indefinite-length CBOR is not accepted")
            default: throw .malformed("reserved CBOR additional information \(info)")
            }
            var v: UInt64 = 0
            for b in try take(width) { v = v << 8 | UInt64(b) }
            let floor: UInt64 = width == 1 ? 24 : 1 << (UInt64(width) * 4)
            guard v >= floor else { throw .malformed("a CBOR length or integer is not in its shortest form") }
            return v
        }

        private mutating func count(_ info: UInt8, limit: Int, what: String) throws(WebAuthnError) -> Int {
            let n = try argument(info)
            guard n <= UInt64(limit) else { throw .malformed("a CBOR \(what) of \(n) is over the limit of \(limit)") }
            return Int(n)
        }

        mutating func item(depth: Int) throws(WebAuthnError) -> CBOR {
            guard bytes.count <= CBOR.maxSize else { throw .malformed("CBOR over \(CBOR.maxSize) bytes") }
            guard depth < CBOR.maxDepth else { throw .malformed("CBOR nested deeper than \(CBOR.maxDepth)") }
            let head = try take(1).first!
            let major = head >> 5
            let info = head & 0x1F
            switch major {
            case 0:
                let v = try argument(info)
                guard v <= UInt64(Int64.max) else { throw .malformed("a CBOR integer does not fit 64 bits") }
                return .int(Int64(v))
            case 1:
                let v = try argument(info)
                guard v <= UInt64(Int64.max) else { throw .malformed("a CBOR integer does not fit 64 bits") }
                return .int(-1 - Int64(v))
            case 2:
                return .bytes(Array(try take(count(info, limit: CBOR.maxSize, what: "byte string length"))))
            case 3:
                let raw = try take(count(info, limit: CBOR.maxSize, what: "text length"))
                guard let s = String(validating: raw, as: UTF8.self) else {
                    throw .malformed("a CBOR text string is not UTF-8")
                }
                return .text(s)
            case 4:
                let n = try count(info, limit: CBOR.maxItems, what: "array length")
                var items: [CBOR] = []
                for _ in 0..<n { items.append(try item(depth: depth + 1)) }
                return .array(items)
            case 5:
                let n = try count(info, limit: CBOR.maxItems, what: "map size")
                var entries: [Entry] = []
                for _ in 0..<n {
                    let key = try item(depth: depth + 1)
                    switch key {
                    case .int, .text: break
                    default: throw .malformed("a CBOR map key is neither an integer nor text")
                    }
                    guard !entries.contains(where: { $0.key == key }) else {
                        throw .malformed("a CBOR map has a duplicate key")
                    }
                    entries.append(Entry(key, try item(depth: depth + 1)))
                }
                return .map(entries)
            case 6:
                throw .malformed("CBOR tags are not accepted")
            default:
                switch info {
                case 20: return .bool(false)
                case 21: return .bool(true)
                case 22: return .null
                case 25, 26, 27: throw .malformed("CBOR floats are not accepted")
                default: throw .malformed("CBOR simple value \(info) is not accepted")
                }
            }
        }
    }
}
