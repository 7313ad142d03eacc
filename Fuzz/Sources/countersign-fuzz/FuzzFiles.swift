import CountersignCrypto

/// FileLock packages (docs/SPEC.md §3) and Countersign's sealed files (§4), opened with the vectors'
/// identity so that the committed vectors are seeds that open.
enum FuzzFiles {
    static func fileLock(_ data: [UInt8]) {
        _ = try? FileLockPackage.open(data, with: FuzzKeys.vectorIdentity)
    }

    /// What opens seals again and opens to the same bytes; so does the input taken as a plaintext.
    static func fileLockRoundtrip(_ data: [UInt8]) {
        let identity = FuzzKeys.vectorIdentity
        if let plaintext = try? FileLockPackage.open(data, with: identity) {
            guard let sealed = try? FileLockPackage.seal(plaintext, to: identity.publicKey),
                (try? FileLockPackage.open(sealed, with: identity)) == plaintext
            else { finding("an opened FileLock package does not seal and open again") }
        }
        guard let sealed = try? FileLockPackage.seal(data, to: identity.publicKey) else {
            finding("FileLockPackage.seal refused \(data.count) bytes")
        }
        guard (try? FileLockPackage.open(sealed, with: identity)) == data else {
            finding("a sealed FileLock package of \(data.count) bytes does not open to them")
        }
    }

    static func sealedFile(_ data: [UInt8]) {
        _ = SealedFormat.detect(data)
        _ = SealedFormat.isSigned(data)
        _ = try? SealedFile.verify(from: MemorySource(data), identity: FuzzKeys.vectorIdentity)
        // Short reads: a source may return fewer bytes than asked, and the reader must not care.
        _ = try? SealedFile.verify(from: MemorySource(data, maxRead: 7), identity: FuzzKeys.vectorIdentity)
    }

    /// A file that opens seals again (signed by the fixed signer when it was signed, with its name) and
    /// opens to the same plaintext and name. The input is also sealed as it stands: its first byte says
    /// whether to sign (bit 0) and whether the bytes up to the first 0x00 are a file name (bit 1).
    static func sealedFileRoundtrip(_ data: [UInt8]) {
        let identity = FuzzKeys.vectorIdentity
        let sink = MemorySink()
        if let opened = try? SealedFile.openReleasingChunksBeforeVerification(
            from: MemorySource(data),
            to: sink,
            identity: identity
        ) {
            check(
                sink.bytes,
                name: opened.fileName,
                signer: opened.signer == nil ? nil : FuzzKeys.signer,
                refusal: "an opened sealed file"
            )
        }
        guard let flags = data.first else { return }
        var plaintext = Array(data.dropFirst())
        var name: String?
        if flags & 2 != 0 {
            let parts = plaintext.split(separator: 0, maxSplits: 1, omittingEmptySubsequences: false)
            name = String(decoding: parts[0], as: UTF8.self)
            plaintext = parts.count > 1 ? Array(parts[1]) : []
        }
        check(plaintext, name: name, signer: flags & 1 != 0 ? FuzzKeys.signer : nil, refusal: nil)
    }

    /// Seals and opens; `refusal` names what must seal (nil: sealing may refuse, e.g. a bad file name).
    private static func check(_ plaintext: [UInt8], name: String?, signer: Identity?, refusal: String?) {
        let identity = FuzzKeys.vectorIdentity
        let sealed = MemorySink()
        do {
            try SealedFile.seal(
                from: MemorySource(plaintext),
                to: sealed,
                recipients: [identity.publicKey],
                signer: signer,
                fileName: name
            )
        } catch {
            if let refusal { finding("\(refusal) does not seal again: \(error)") }
            return
        }
        let out = MemorySink()
        do {
            let opened = try SealedFile.openReleasingChunksBeforeVerification(
                from: MemorySource(sealed.bytes),
                to: out,
                identity: identity,
                expectedSender: signer?.publicKey
            )
            // An empty name is no name: the stream writes both as name_len 0 (docs/SPEC.md §4.3).
            let carried = name?.isEmpty == true ? nil : name
            guard out.bytes == plaintext, opened.fileName == carried, opened.signer == signer?.publicKey else {
                finding("a sealed file does not open to its plaintext, name \(name.debugDescription) and signer")
            }
        } catch {
            finding("a sealed file of \(plaintext.count) bytes, name \(name.debugDescription) does not open: \(error)")
        }
    }
}
