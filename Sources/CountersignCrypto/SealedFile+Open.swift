import Crypto
import Dispatch

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension SealedFile {
    /// Checks a version 1 sealed file completely (every tag, the end, and the signature: docs/SPEC.md §4.5)
    /// and releases nothing. With `expectedSender`, the file must be signed by that key. To release only
    /// verified plaintext, verify a private copy with this, then open the same copy with
    /// `openReleasingChunksBeforeVerification` (a file that changes in between defeats the check).
    @discardableResult
    public static func verify(
        from source: ByteSource,
        identity: Identity,
        expectedSender: PublicKey? = nil,
        progress: ((Int) -> Void)? = nil
    ) throws -> Opened {
        try openReleasingChunksBeforeVerification(
            from: source,
            to: DiscardSink(),
            identity: identity,
            expectedSender: expectedSender,
            progress: progress
        )
    }

    /// Opens a version 1 sealed file as a stream. **It writes each chunk's plaintext to `sink` as soon as
    /// that chunk's tag verified, before the file's end and its sender signature are checked**: when this
    /// throws (truncated, tampered later on, signature missing, invalid or by another sender), `sink` has
    /// already received an authenticated prefix, which the caller must discard or mark as incomplete and
    /// unverified. Callers that must not release anything unverified call `verify` on a private copy first
    /// (as `countersign open` does for signed files to standard output), or write to a temporary file that
    /// is kept only when this returns. Checks run in the order of docs/SPEC.md §4.5; `progress` receives the
    /// number of sealed bytes consumed so far.
    @discardableResult
    public static func openReleasingChunksBeforeVerification(
        from source: ByteSource,
        to sink: ByteSink,
        identity: Identity,
        expectedSender: PublicKey? = nil,
        progress: ((Int) -> Void)? = nil
    ) throws -> Opened {
        typealias F = SealedFileFormat
        var fixed = [UInt8](repeating: 0, count: F.fixedHeaderLength)
        var got = try source.fill(&fixed, from: 0, count: 8)
        guard got == 8, Array(fixed[0..<8]) == F.magic else { throw SealError.unknownFormat }
        got = try source.fill(&fixed, from: 8, count: 1)
        guard got == 1 else { throw SealError.header("the file ends inside the header") }
        guard fixed[8] == F.version else { throw SealError.unknownVersion(fixed[8]) }
        got = try source.fill(&fixed, from: 9, count: F.fixedHeaderLength - 9)
        guard got == F.fixedHeaderLength - 9 else { throw SealError.header("the file ends inside the header") }
        let flags = fixed[9]
        guard flags & ~F.flagSigned == 0 else { throw SealError.header("unknown flags 0x\(String(flags, radix: 16))") }
        let signed = flags & F.flagSigned != 0
        let salt = Array(fixed[10..<10 + F.saltLength])
        let n = Int(fixed[F.fixedHeaderLength - 2]) << 8 | Int(fixed[F.fixedHeaderLength - 1])
        guard n >= 1, n <= F.maxRecipients else { throw SealError.header("recipient count \(n) is out of range") }
        var rest = [UInt8](repeating: 0, count: n * F.stanzaLength + F.macLength)
        guard try source.fill(&rest, from: 0, count: rest.count) == rest.count else {
            throw SealError.header("the file ends inside the header")
        }
        let header = fixed + rest

        let mine = identity.publicKey.fingerprint
        var sealedTo: [Fingerprint] = []
        var fileKey: [UInt8]?
        for i in 0..<n {
            let s = F.fixedHeaderLength + i * F.stanzaLength
            let keyID = Array(header[s..<s + F.keyIDLength])
            sealedTo.append(Fingerprint(bytes: keyID))
            guard keyID == mine.bytes, fileKey == nil else { continue }
            let stanza = RecipientStanza(
                keyID: keyID,
                enc: Array(header[s + F.keyIDLength..<s + F.keyIDLength + F.encLength]),
                wrappedKey: Array(header[s + F.keyIDLength + F.encLength..<s + F.stanzaLength])
            )
            guard let key = identity.unwrap(stanza) else {
                throw SealError.header("the recipient stanza for this key does not unwrap")
            }
            fileKey = key
        }
        guard let fileKey else { throw SealError.notForThisKey(sealedTo: sealedTo, yours: mine) }
        let macStart = header.count - F.macLength
        guard
            HMAC<SHA256>.isValidAuthenticationCode(
                header[macStart...],
                authenticating: header[..<macStart],
                using: F.headerKey(fileKey)
            )
        else {
            throw SealError.header("the header MAC does not verify")
        }
        if expectedSender != nil, !signed { throw SealError.signatureMissing }

        var transcript = SHA256()
        if signed { transcript.update(data: header) }
        let key = F.payloadKey(fileKey, salt: salt)
        let trailer = signed ? F.signatureBlockLength : 0
        // Chunks are opened a batch at a time on all cores while the next batch is read. A window holds a
        // full batch, the trailer and one byte that proves more follows; after a batch only that small
        // tail is carried into the other window.
        let batchSealed = F.batchChunks * F.sealedChunkSize
        let window = batchSealed + trailer + 1
        var buffer = [UInt8](repeating: 0, count: window)
        var spare = [UInt8](repeating: 0, count: window)
        var end = try source.fill(&buffer, from: 0, count: window)
        var eof = end < window
        var counter: UInt64 = 0
        var consumed = header.count
        var nameLength: Int?
        var fileName: String?
        let opened = UnsafeMutableBufferPointer<Data?>.allocate(capacity: F.batchChunks)
        opened.initialize(repeating: nil)
        defer {
            opened.deinitialize()
            opened.deallocate()
        }
        var signatureBlockStart = 0  // in `buffer`, once the final batch is processed

        while true {
            let available = end
            let finalBatch = eof && available <= batchSealed + trailer
            let payload = finalBatch ? available - trailer : batchSealed
            guard payload >= F.tagLength + 1 else {
                // Too short to hold a final chunk (and the signature block): the end is missing.
                throw SealError.truncated
            }
            let chunks = (payload + F.sealedChunkSize - 1) / F.sealedChunkSize
            let finalLength = payload - (chunks - 1) * F.sealedChunkSize
            var nextEnd = 0
            var nextEOF = true
            if finalBatch {
                openChunks(
                    buffer,
                    from: 0,
                    chunks: chunks,
                    finalLength: finalLength,
                    firstCounter: counter,
                    key: key,
                    into: opened
                )
            } else {
                let tail = end - payload
                spare.replaceSubrange(0..<tail, with: buffer[payload..<end])
                let got = try SealedFile.readConcurrently(source, into: &spare, from: tail, count: window - tail) {
                    openChunks(
                        buffer,
                        from: 0,
                        chunks: chunks,
                        finalLength: nil,
                        firstCounter: counter,
                        key: key,
                        into: opened
                    )
                }
                nextEnd = tail + got
                nextEOF = eof || got < window - tail
            }
            for i in 0..<chunks {
                let isFinal = finalBatch && i == chunks - 1
                let chunkStart = i * F.sealedChunkSize
                let chunkLength = isFinal ? finalLength : F.sealedChunkSize
                guard isFinal ? chunkLength >= F.tagLength + 1 : true else { throw SealError.truncated }
                guard let plaintext = opened[i] else {
                    throw isFinal
                        ? classifyFinalFailure(
                            buffer[chunkStart..<end],
                            key: key,
                            counter: counter + UInt64(i),
                            signed: signed
                        )
                        : SealError.tampered
                }
                opened[i] = nil
                if signed {
                    buffer.withUnsafeBytes { b in
                        transcript.update(
                            bufferPointer: UnsafeRawBufferPointer(rebasing: b[chunkStart..<chunkStart + chunkLength])
                        )
                    }
                }
                var body = plaintext[...]
                if nameLength == nil {
                    guard body.count >= 2 else { throw SealError.tampered }
                    let len = Int(body[body.startIndex]) << 8 | Int(body[body.startIndex + 1])
                    guard len <= F.maxNameLength, body.count >= 2 + len else { throw SealError.tampered }
                    let nameBytes = body[(body.startIndex + 2)..<(body.startIndex + 2 + len)]
                    guard let name = String(bytes: nameBytes, encoding: .utf8), !nameBytes.contains(0),
                        !name.contains("/"), !name.contains("\\")
                    else { throw SealError.tampered }
                    nameLength = len
                    fileName = len == 0 ? nil : name
                    body = body.dropFirst(2 + len)
                }
                try body.withUnsafeBytes { try sink.write($0) }
                consumed += chunkLength
            }
            progress?(consumed)
            if finalBatch {
                signatureBlockStart = payload
                break
            }
            swap(&buffer, &spare)
            end = nextEnd
            eof = nextEOF
            counter += UInt64(chunks)
        }

        guard signed else { return Opened(fileName: fileName, signer: nil) }
        let signerKey: PublicKey
        do {
            let block = Array(buffer[signatureBlockStart..<end])
            let box = try AES.GCM.SealedBox(
                nonce: F.zeroNonce,
                ciphertext: block.dropLast(F.tagLength),
                tag: block.suffix(F.tagLength)
            )
            let content = Array(try AES.GCM.open(box, using: F.signatureKey(fileKey, salt: salt)))
            guard content.count == 129 else { throw SealError.tampered }
            signerKey = try PublicKey(point: Array(content[0..<65]))
            guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: content[65...]) else {
                throw SealError.badSignature(expected: expectedSender?.fingerprint, found: signerKey.fingerprint)
            }
            let message = F.signaturePrefix + Array(transcript.finalize())
            guard signerKey.signingKey.isValidSignature(signature, for: message) else {
                throw SealError.badSignature(expected: expectedSender?.fingerprint, found: signerKey.fingerprint)
            }
        } catch let e as SealError {
            throw e
        } catch KeyError.invalidPoint {
            throw SealError.badSignature(expected: expectedSender?.fingerprint, found: nil)
        } catch {
            throw SealError.tampered
        }
        if let expectedSender, expectedSender != signerKey {
            throw SealError.badSignature(expected: expectedSender.fingerprint, found: signerKey.fingerprint)
        }
        return Opened(fileName: fileName, signer: signerKey)
    }

    /// Opens `chunks` consecutive sealed chunks from `offset` in parallel; `opened[i]` is nil where the tag
    /// failed. With `finalLength`, the last one is the final chunk and has that length.
    private static func openChunks(
        _ buffer: [UInt8],
        from offset: Int,
        chunks: Int,
        finalLength: Int?,
        firstCounter: UInt64,
        key: SymmetricKey,
        into opened: UnsafeMutableBufferPointer<Data?>
    ) {
        typealias F = SealedFileFormat
        buffer.withUnsafeBytes { raw in
            nonisolated(unsafe) let raw = raw
            nonisolated(unsafe) let opened = opened
            let work: @Sendable (Int) -> Void = { i in
                let isFinal = finalLength != nil && i == chunks - 1
                let length = isFinal ? finalLength! : F.sealedChunkSize
                guard length >= F.tagLength + 1 else {
                    opened[i] = nil
                    return
                }
                let start = offset + i * F.sealedChunkSize
                let c = UnsafeRawBufferPointer(rebasing: raw[start..<start + length])
                opened[i] = try? AES.GCM.open(
                    AES.GCM.SealedBox(
                        nonce: F.chunkNonce(firstCounter + UInt64(i), last: isFinal),
                        ciphertext: c.dropLast(F.tagLength),
                        tag: c.suffix(F.tagLength)
                    ),
                    using: key
                )
            }
            if chunks == 1 { work(0) } else { DispatchQueue.concurrentPerform(iterations: chunks, execute: work) }
        }
    }

    /// The final chunk failed. If what remains is a complete chunk sealed as *not* last, the file was cut
    /// at a chunk boundary: report truncation, never accept it.
    private static func classifyFinalFailure(
        _ rest: ArraySlice<UInt8>,
        key: SymmetricKey,
        counter: UInt64,
        signed: Bool
    ) -> SealError {
        typealias F = SealedFileFormat
        // A signed file whose remaining bytes are exactly a valid final chunk lost its signature block.
        if signed, rest.count <= F.sealedChunkSize,
            let box = try? AES.GCM.SealedBox(
                nonce: F.chunkNonce(counter, last: true),
                ciphertext: rest.dropLast(F.tagLength),
                tag: rest.suffix(F.tagLength)
            ),
            (try? AES.GCM.open(box, using: key)) != nil
        {
            return .truncated
        }
        guard rest.count >= F.sealedChunkSize else { return .tampered }
        let c = rest.prefix(F.sealedChunkSize)
        if let box = try? AES.GCM.SealedBox(
            nonce: F.chunkNonce(counter, last: false),
            ciphertext: c.dropLast(F.tagLength),
            tag: c.suffix(F.tagLength)
        ),
            (try? AES.GCM.open(box, using: key)) != nil
        {
            return .truncated
        }
        return .tampered
    }
}
