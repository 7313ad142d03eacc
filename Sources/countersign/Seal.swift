import ArgumentParser
import CountersignCrypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension SealedFormat: ExpressibleByArgument {}

struct Seal: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Seal a file to one or more public keys.",
        discussion: """
            Reads FILE (or standard input) and writes the sealed file to -o OUT (created only when complete) \
            or to standard output. -r takes a public key file in SPKI or FileLock form.
            """
    )

    @OptionGroup var recipients: RecipientOptions

    @Option(name: .short, help: ArgumentHelp("Sign as the sender with this private key file.", valueName: "keyfile"))
    var signer: String?

    @OptionGroup var keyOptions: PrivateKeyOptions

    @Option(name: .long, help: "countersign (default) or filelock (the FileLock iOS app's package).")
    var format: SealedFormat = .countersign

    @Flag(name: .long, help: "Carry FILE's base name inside the encryption.")
    var keepName = false

    @Option(name: .short, help: ArgumentHelp("Write here instead of standard output.", valueName: "out"))
    var output: String?

    @Flag(name: .long, help: "Replace OUT if it exists.")
    var force = false

    @Argument(help: ArgumentHelp("The file to seal; - or nothing for standard input.", valueName: "file"))
    var input: String?

    func validate() throws {
        if format == .filelock {
            if recipients.recipient.count > 1 { throw ValidationError("the FileLock format has exactly one recipient") }
            if signer != nil {
                throw ValidationError("the FileLock format cannot carry a signature; leave out -s or the --format")
            }
            if keepName { throw ValidationError("the FileLock format cannot carry a file name") }
        }
        if keepName, input == nil || input == "-" { throw ValidationError("--keep-name needs a FILE argument") }
        if output == nil, isatty(1) == 1 {
            throw ValidationError(
                "refusing to write sealed bytes to a terminal; use -o OUT or redirect standard output"
            )
        }
    }

    func run() throws {
        let keys = try recipients.publicKeys()
        let signerIdentity = try signer.map { try KeyFiles.identity($0, keyOptions) }
        let source = try FileDescriptorSource(path: input)
        let file = try output.map { try AtomicOutput(path: $0, force: force, mode: 0o644) }
        let sink: ByteSink = file?.sink ?? FileDescriptorSink(fd: 1)
        do {
            switch format {
            case .filelock:
                guard let plaintext = try PrefixedSource.readAll(source, limit: FileLockPackage.maxPlaintext) else {
                    throw SealError.tooLarge(limit: FileLockPackage.maxPlaintext)
                }
                let package = try FileLockPackage.seal(plaintext, to: keys[0])
                try sink.write(package)
            case .countersign:
                let progress = Terminal.Progress(label: "sealing", total: source.size)
                defer { progress?.finish() }
                let name = keepName ? input.map { URL(fileURLWithPath: $0).lastPathComponent } : nil
                try SealedFile.seal(
                    from: source,
                    to: sink,
                    recipients: keys,
                    signer: signerIdentity,
                    fileName: name,
                    progress: progress.map { p in { p.update($0) } }
                )
            }
            try file?.commit()
        } catch {
            file?.discard()
            throw error
        }
    }
}
