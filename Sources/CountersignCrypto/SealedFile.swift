import Crypto
import Dispatch

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The streaming, multi-recipient, optionally signed format (docs/SPEC.md §4). Sealing and opening hold
/// two chunks at a time, whatever the size of the input.
public enum SealedFile {
    /// What opening learned besides the plaintext.
    public struct Opened: Equatable, Sendable {
        /// The name the sender carried inside the encryption, if any.
        public var fileName: String?
        /// The verified sender, when the file is signed.
        public var signer: PublicKey?

        public init(fileName: String?, signer: PublicKey?) {
            self.fileName = fileName
            self.signer = signer
        }
    }

    /// Seals `source` to `recipients`. With `signer`, appends the encrypted sender signature.
    /// `progress` receives the number of plaintext bytes consumed so far. Package-only: every key, salt and
    /// ephemeral scalar comes from `rng`, so a replayed generator (a copied seeded one) would reuse file keys
    /// and GCM nonces; tests and the vector generator pin it, applications use the overload below.
    package static func seal<R: RandomNumberGenerator>(
        from source: ByteSource,
        to sink: ByteSink,
        recipients: [PublicKey],
        signer: Identity? = nil,
        fileName: String? = nil,
        using rng: inout R,
        progress: ((Int) -> Void)? = nil
    ) throws {
        typealias F = SealedFileFormat
        guard !recipients.isEmpty else { throw SealError.invalidArgument("at least one recipient (-r) is needed") }
        guard recipients.count <= F.maxRecipients else {
            throw SealError.invalidArgument("at most \(F.maxRecipients) recipients are allowed")
        }
        let name = Array((fileName ?? "").utf8)
        guard name.count <= F.maxNameLength, !name.contains(0), !name.contains(UInt8(ascii: "/")),
            !name.contains(UInt8(ascii: "\\"))
        else {
            throw SealError.invalidArgument(
                "the file name to carry must be at most 255 bytes of UTF-8 without '/', '\\' or NUL"
            )
        }

        let fileKey = rng.bytes(32)
        let salt = rng.bytes(F.saltLength)
        var header = F.magic + [F.version, signer == nil ? 0 : F.flagSigned] + salt
        header += [UInt8(recipients.count >> 8), UInt8(recipients.count & 0xff)]
        for r in recipients {
            header += try r.wrap(fileKey: fileKey, using: &rng).bytes
        }
        header += Array(HMAC<SHA256>.authenticationCode(for: header, using: F.headerKey(fileKey)))
        try sink.write(header)

        var transcript = SHA256()
        if signer != nil { transcript.update(data: header) }
        let key = F.payloadKey(fileKey, salt: salt)

        // Chunks are sealed a batch at a time on all cores. The next batch is read before the current
        // one is sealed, to know whether the current one holds the final chunk.
        let batchBytes = F.batchChunks * F.chunkSize
        var current = [UInt8](repeating: 0, count: batchBytes)
        var next = [UInt8](repeating: 0, count: batchBytes)
        let prefix = [UInt8(name.count >> 8), UInt8(name.count & 0xff)] + name
        current.replaceSubrange(0..<prefix.count, with: prefix)
        var currentCount =
            prefix.count + (try source.fill(&current, from: prefix.count, count: batchBytes - prefix.count))
        var consumed = currentCount - prefix.count
        var counter: UInt64 = 0
        let boxes = UnsafeMutableBufferPointer<AES.GCM.SealedBox?>.allocate(capacity: F.batchChunks)
        boxes.initialize(repeating: nil)
        defer {
            boxes.deinitialize()
            boxes.deallocate()
        }
        while true {
            // All but the batch's last chunk are sealed while the next batch is read; the last one
            // waits to learn whether the input ended with it.
            let chunks = (currentCount + F.chunkSize - 1) / F.chunkSize
            let nextCount: Int
            if currentCount == batchBytes {
                nextCount = try readConcurrently(source, into: &next, count: batchBytes) {
                    sealChunks(
                        current,
                        count: currentCount,
                        range: 0..<chunks - 1,
                        firstCounter: counter,
                        lastChunk: nil,
                        key: key,
                        into: boxes
                    )
                }
            } else {
                nextCount = 0
                sealChunks(
                    current,
                    count: currentCount,
                    range: 0..<chunks - 1,
                    firstCounter: counter,
                    lastChunk: nil,
                    key: key,
                    into: boxes
                )
            }
            let lastBatch = nextCount == 0
            sealChunks(
                current,
                count: currentCount,
                range: chunks - 1..<chunks,
                firstCounter: counter,
                lastChunk: lastBatch ? chunks - 1 : nil,
                key: key,
                into: boxes
            )
            for i in 0..<chunks {
                // combined = nonce || ciphertext || tag (12-byte nonce), so one write carries ciphertext || tag.
                guard let sealed = boxes[i]?.combined?.dropFirst(12) else {
                    throw SealError.invalidArgument("AES-GCM failed to seal a chunk")
                }
                try sink.write(sealed)
                if signer != nil { transcript.update(data: sealed) }
                boxes[i] = nil
            }
            progress?(consumed)
            if lastBatch { break }
            swap(&current, &next)
            currentCount = nextCount
            consumed += nextCount
            counter += UInt64(chunks)
        }

        if let signer {
            let message = F.signaturePrefix + Array(transcript.finalize())
            let signature = try signer.signingKey.signature(for: message)
            let block = try AES.GCM.seal(
                signer.publicKey.point + Array(signature.rawRepresentation),
                using: F.signatureKey(fileKey, salt: salt),
                nonce: F.zeroNonce
            )
            try sink.write(block.ciphertext)
            try sink.write(block.tag)
        }
    }

    /// Seals chunks `range` of a batch in parallel; `boxes[i]` receives chunk `i` (nil only if AES-GCM failed).
    /// `lastChunk` is the index that carries the final flag, if it is in this batch.
    private static func sealChunks(
        _ plaintext: [UInt8],
        count: Int,
        range: Range<Int>,
        firstCounter: UInt64,
        lastChunk: Int?,
        key: SymmetricKey,
        into boxes: UnsafeMutableBufferPointer<AES.GCM.SealedBox?>
    ) {
        typealias F = SealedFileFormat
        guard !range.isEmpty else { return }
        plaintext.withUnsafeBytes { raw in
            nonisolated(unsafe) let raw = raw
            nonisolated(unsafe) let boxes = boxes
            let work: @Sendable (Int) -> Void = { j in
                let i = range.lowerBound + j
                let start = i * F.chunkSize
                let end = min(start + F.chunkSize, count)
                let nonce = F.chunkNonce(firstCounter + UInt64(i), last: i == lastChunk)
                boxes[i] = try? AES.GCM.seal(
                    UnsafeRawBufferPointer(rebasing: raw[start..<end]),
                    using: key,
                    nonce: nonce
                )
            }
            if range.count == 1 {
                work(0)
            } else {
                DispatchQueue.concurrentPerform(iterations: range.count, execute: work)
            }
        }
    }

    /// Fills `count` bytes of `buffer` from `offset`, from `source` on another thread while `work` runs on
    /// this one; returns bytes read (fewer only at end of input).
    static func readConcurrently(
        _ source: ByteSource,
        into buffer: inout [UInt8],
        from offset: Int = 0,
        count: Int,
        while work: () -> Void
    ) throws -> Int {
        nonisolated(unsafe) let source = source
        nonisolated(unsafe) var result: Result<Int, Error> = .success(0)
        let done = DispatchSemaphore(value: 0)
        try buffer.withUnsafeMutableBytes { raw in
            nonisolated(unsafe) let raw = raw
            DispatchQueue.global().async {
                result = Result {
                    var got = 0
                    while got < count {
                        let n = try source.read(
                            into: UnsafeMutableRawBufferPointer(rebasing: raw[(offset + got)..<(offset + count)])
                        )
                        if n == 0 { break }
                        got += n
                    }
                    return got
                }
                done.signal()
            }
            work()
            done.wait()
            _ = try result.get()
        }
        return try result.get()
    }

    /// Seals `source` to `recipients` with fresh system randomness; see the generic overload for the rest.
    public static func seal(
        from source: ByteSource,
        to sink: ByteSink,
        recipients: [PublicKey],
        signer: Identity? = nil,
        fileName: String? = nil,
        progress: ((Int) -> Void)? = nil
    ) throws {
        var rng = SystemRandomNumberGenerator()
        try seal(
            from: source,
            to: sink,
            recipients: recipients,
            signer: signer,
            fileName: fileName,
            using: &rng,
            progress: progress
        )
    }
}
