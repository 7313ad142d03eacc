import CountersignCrypto

/// Replays bytes already read (to detect the format) before the rest of a source.
final class PrefixedSource: ByteSource {
    private var prefix: [UInt8]
    private let rest: ByteSource

    init(prefix: [UInt8], rest: ByteSource) {
        self.prefix = prefix
        self.rest = rest
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard prefix.isEmpty else {
            let n = min(prefix.count, buffer.count)
            prefix.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            prefix.removeFirst(n)
            return n
        }
        return try rest.read(into: buffer)
    }

    /// Reads up to `count` bytes from `source` (fewer only at end of input).
    static func peek(_ source: ByteSource, count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = try bytes.withUnsafeMutableBytes {
                try source.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[got...]))
            }
            if n == 0 { break }
            got += n
        }
        return Array(bytes[0..<got])
    }

    /// The whole of `source`, refusing more than `limit` bytes.
    static func readAll(_ source: ByteSource, limit: Int) throws -> [UInt8]? {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = try chunk.withUnsafeMutableBytes { try source.read(into: $0) }
            if n == 0 { return out }
            out += chunk[0..<n]
            if out.count > limit { return nil }
        }
    }
}
