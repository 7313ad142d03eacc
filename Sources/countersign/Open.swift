import ArgumentParser
import CountersignCrypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

struct Open: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Open a sealed file (Countersign or FileLock format, detected).",
        discussion: """
            With -o, the plaintext appears at OUT only after every check passed; on any failure nothing is \
            there and the exit status is 1. To standard output, only authenticated plaintext is written: a \
            signed file is verified completely before its first byte is written (docs/SPEC.md §4.6).
            """
    )

    @Option(name: .short, help: ArgumentHelp("Your private key file.", valueName: "keyfile"))
    var identity: String

    @OptionGroup var keyOptions: PrivateKeyOptions

    @Option(name: .long, help: ArgumentHelp("Demand a signature by this sender's public key.", valueName: "pubkey"))
    var from: String?

    @Option(name: .short, help: ArgumentHelp("Write the plaintext here instead of standard output.", valueName: "out"))
    var output: String?

    @Flag(name: .long, help: "Replace OUT if it exists.")
    var force = false

    @Argument(help: ArgumentHelp("The sealed file; - or nothing for standard input.", valueName: "file"))
    var input: String?

    func run() throws {
        let sender = try from.map(KeyFiles.publicKey)
        let me = try KeyFiles.identity(identity, keyOptions)
        let source = try FileDescriptorSource(path: input)
        let head = try PrefixedSource.peek(source, count: SealedFormat.detectionLength)
        let file = try output.map { try AtomicOutput(path: $0, force: force) }
        // Counts what reached standard output, so a failure can say how much was released.
        let stdout = FileDescriptorSink(fd: 1)
        do {
            let opened: SealedFile.Opened
            switch SealedFormat.detect(head) {
            case .filelock?:
                guard sender == nil else { throw SealError.signatureMissing }
                opened = try openFileLock(
                    PrefixedSource(prefix: head, rest: source),
                    identity: me,
                    sink: file?.sink ?? stdout
                )
            case .countersign?:
                if file == nil, SealedFormat.isSigned(head) {
                    opened = try openVerifiedFirst(source, head: head, identity: me, sender: sender, to: stdout)
                } else {
                    let progress = Terminal.Progress(label: "opening", total: source.size)
                    defer { progress?.finish() }
                    // Unsigned to stdout: authenticated chunks stream out as they verify (SPEC §4.6); a
                    // file is only linked in at the end, so both cases may stream.
                    opened = try SealedFile.openReleasingChunksBeforeVerification(
                        from: PrefixedSource(prefix: head, rest: source),
                        to: file?.sink ?? stdout,
                        identity: me,
                        expectedSender: sender,
                        progress: progress.map { p in { p.update($0) } }
                    )
                }
            case nil:
                throw SealError.unknownFormat
            }
            try file?.commit()
            if let name = opened.fileName { Terminal.warn("file name: \(Terminal.printable(name))") }
            if let signer = opened.signer { Terminal.warn("signed by: \(signer.fingerprint)") }
        } catch {
            file?.discard()
            throw CLIError.io("\(error); " + Self.released(output: output, stdoutBytes: stdout.written))
        }
    }

    /// What a failed open left behind, so the message is true whatever was written.
    static func released(output: String?, stdoutBytes: Int) -> String {
        if let output { return "nothing was written to \(output)" }
        if stdoutBytes == 0 { return "nothing was written" }
        return "\(stdoutBytes) bytes of authenticated plaintext were written to standard output before the failure; "
            + "that output is incomplete: discard it"
    }

    private func openFileLock(_ source: ByteSource, identity: Identity, sink: ByteSink) throws -> SealedFile.Opened {
        guard let package = try PrefixedSource.readAll(source, limit: FileLockPackage.maxPlaintext + 157) else {
            throw SealError.tooLarge(limit: FileLockPackage.maxPlaintext)
        }
        let plaintext = try FileLockPackage.open(package, with: identity)
        try plaintext.withUnsafeBytes { try sink.write($0) }
        return SealedFile.Opened(fileName: nil, signer: nil)
    }

    /// Pass 1 checks every tag and the signature and writes nothing; pass 2 decrypts to stdout. Both run
    /// on a private copy of the *sealed* input (an unlinked temporary file), so the bytes decrypted in pass 2
    /// are the bytes verified in pass 1 even if the original file changes in between.
    private func openVerifiedFirst(
        _ source: FileDescriptorSource,
        head: [UInt8],
        identity: Identity,
        sender: PublicKey?,
        to sink: ByteSink
    ) throws -> SealedFile.Opened {
        let replay = try spool(PrefixedSource(prefix: head, rest: source))
        let progress = Terminal.Progress(label: "verifying", total: replay.size)
        try SealedFile.verify(
            from: replay,
            identity: identity,
            expectedSender: sender,
            progress: progress.map { p in { p.update($0) } }
        )
        progress?.finish()
        try replay.rewind()
        return try SealedFile.openReleasingChunksBeforeVerification(
            from: replay,
            to: sink,
            identity: identity,
            expectedSender: sender
        )
    }

    private func spool(_ source: ByteSource) throws -> FileDescriptorSource {
        let dir = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        var template = Array((dir + "/countersign-spool-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw CLIError.io("cannot create a spool file in \(dir)") }
        unlink(String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self))
        let spooled = FileDescriptorSource(fd: fd, owns: true)
        let sink = FileDescriptorSink(fd: fd)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            if n == 0 { break }
            try buffer.withUnsafeBytes { try sink.write(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
        try spooled.rewind()
        return spooled
    }
}
