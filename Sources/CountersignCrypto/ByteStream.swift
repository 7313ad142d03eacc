#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where sealing and opening read bytes from. The library does no I/O of its own: the caller passes a
/// source over a file descriptor, a pipe or memory.
public protocol ByteSource: AnyObject {
    /// Fills up to `buffer.count` bytes and returns how many; 0 means end of input.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
}

/// Where sealing and opening write bytes to.
public protocol ByteSink: AnyObject {
    func write(_ bytes: UnsafeRawBufferPointer) throws
}

extension ByteSource {
    /// Reads until `buffer` holds `count` bytes from `offset` or the input ends; returns bytes read.
    func fill(_ buffer: inout [UInt8], from offset: Int, count: Int) throws -> Int {
        var got = 0
        while got < count {
            let n = try buffer.withUnsafeMutableBytes { all in
                try read(into: UnsafeMutableRawBufferPointer(rebasing: all[(offset + got)..<(offset + count)]))
            }
            if n == 0 { break }
            got += n
        }
        return got
    }
}

extension ByteSink {
    public func write<C: ContiguousBytes>(_ bytes: C) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }
}

/// An in-memory source, for tests and small inputs.
public final class MemorySource: ByteSource {
    private let bytes: [UInt8]
    private var offset = 0
    /// At most this many bytes per read, to exercise short reads.
    private let maxRead: Int

    public init(_ bytes: [UInt8], maxRead: Int = .max) {
        self.bytes = bytes
        self.maxRead = maxRead
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let n = min(buffer.count, bytes.count - offset, maxRead)
        if n > 0 {
            bytes.withUnsafeBytes { src in
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: src[offset..<offset + n]))
            }
        }
        offset += n
        return n
    }
}

/// An in-memory sink.
public final class MemorySink: ByteSink {
    public private(set) var bytes: [UInt8] = []
    public init() {}
    public func write(_ bytes: UnsafeRawBufferPointer) throws { self.bytes.append(contentsOf: bytes) }
}

/// A sink that counts and drops, for the verify-only pass.
public final class DiscardSink: ByteSink {
    public private(set) var count = 0
    public init() {}
    public func write(_ bytes: UnsafeRawBufferPointer) throws { count += bytes.count }
}
