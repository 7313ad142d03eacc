import ArgumentParser
import CountersignCrypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `countersign message seal|open`: short texts, end-to-end sealed and signed.
struct Message: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Seal a short text to device keys and sign it, or verify and open one.",
        discussion: """
            Seal:  countersign message seal -r bob.pub -s alice.key "see you at noon" > msg.txt
            Open:  countersign message open -i bob.key --from alice.pub < msg.txt
            The default envelope (docs/SPEC.md §8) is HPKE P-256 to each recipient and an ECDSA signature \
            by the sender; --format pingidentity writes and reads the PingIdentity app's RSA payload.
            """,
        subcommands: [MessageSeal.self, MessageOpen.self]
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case countersign, pingidentity
    }

    static let pingIdentityWarning =
        "warning: the PingIdentity format is weak (RSA PKCS#1 v1.5 encryption, often RSA-1024); use it only to talk to the PingIdentity app"

    /// Step labels on stderr, as the PingIdentity app shows them.
    static func reporter(_ verbose: Bool) -> (String) -> Void {
        { step in if verbose { Terminal.warn(step) } }
    }
}

struct MessageSeal: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seal",
        abstract: "Seal TEXT to the recipients, signed by you, and print the envelope.",
        discussion: """
            TEXT is the message itself (put -- before a text that starts with a dash); - or nothing reads it \
            from standard input (UTF-8, at most 1 MiB). The envelope goes to standard output.
            """
    )

    @OptionGroup var recipients: RecipientOptions

    @Option(
        name: .short,
        help: ArgumentHelp("Your private key file: the message is signed with it.", valueName: "keyfile")
    )
    var signer: String

    @OptionGroup var keyOptions: PrivateKeyOptions

    @Option(name: .long, help: "countersign (default) or pingidentity (the PingIdentity app's RSA payload; weak).")
    var format: Message.Format = .countersign

    @Flag(name: .long, help: "Report each step on standard error.")
    var verbose = false

    @Argument(help: ArgumentHelp("The message text; - or nothing for standard input.", valueName: "text"))
    var text: String?

    func validate() throws {
        if format == .pingidentity, recipients.recipient.count > 1 {
            throw ValidationError("the PingIdentity format has exactly one recipient; leave out --format for several")
        }
    }

    func run() throws {
        let report = Message.reporter(verbose)
        let plaintext = try readText()
        switch format {
        case .countersign:
            let keys = try recipients.publicKeys()
            let me = try KeyFiles.identity(signer, keyOptions)
            let envelope = try MessageEnvelope.seal(plaintext, from: me, to: keys, created: Date()) {
                report($0.rawValue)
            }
            FileHandle.standardOutput.write(Data(envelope.armored.utf8))
        case .pingidentity:
            Terminal.warn(Message.pingIdentityWarning)
            let to = try KeyFiles.legacyRSAPublicKey(recipients.recipient[0])
            let me = try KeyFiles.legacyRSAKey(signer, keyOptions)
            let payload = try PingIdentityPayload.seal(String(decoding: plaintext, as: UTF8.self), to: to, signer: me) {
                report($0.rawValue)
            }
            FileHandle.standardOutput.write(Data((payload.json + "\n").utf8))
        }
    }

    private func readText() throws -> [UInt8] { try MessageText.read(text) }
}

struct MessageOpen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Verify the sender's signature, then decrypt and print the text.",
        discussion: """
            ENVELOPE is the envelope text itself (armored, or the PingIdentity JSON; put -- before an armored one, \
            which starts with dashes); - or nothing reads it from standard input. The format is detected. Nothing is decrypted unless the signature by --from verifies. \
            With --verbose the signed header (sender, recipients, message ID, creation time) goes to standard \
            error, so you can spot a replayed or re-dated message.
            """
    )

    @Option(name: .short, help: ArgumentHelp("Your private key file.", valueName: "keyfile"))
    var identity: String

    @Option(name: .long, help: ArgumentHelp("The sender's public key: its signature is required.", valueName: "pubkey"))
    var from: String

    @OptionGroup var keyOptions: PrivateKeyOptions

    @Option(name: .long, help: "Insist on countersign or pingidentity (detected when left out).")
    var format: Message.Format?

    @Flag(name: .long, help: "Report each step and the signed header on standard error.")
    var verbose = false

    @Argument(help: ArgumentHelp("The envelope text; - or nothing for standard input.", valueName: "envelope"))
    var envelope: String?

    func run() throws {
        let text = try readEnvelope()
        // Bytes, not Characters: Swift merges CR LF into one Character, so a Character set would miss LF.
        let trimmed = text.utf8.drop { [0x20, 0x09, 0x0D, 0x0A].contains($0) }
        let detected: Message.Format
        if trimmed.starts(with: "{".utf8) {
            detected = .pingidentity
        } else if trimmed.starts(with: "-----BEGIN COUNTERSIGN MESSAGE-----".utf8) {
            detected = .countersign
        } else {
            let hint =
                envelope.map {
                    FileManager.default.fileExists(atPath: $0)
                        ? "; to read the file \($0), run: countersign message open … < \($0)" : ""
                } ?? ""
            throw CLIError.usage(
                "not a message envelope: expected -----BEGIN COUNTERSIGN MESSAGE----- or PingIdentity JSON\(hint)"
            )
        }
        if let format, format != detected {
            throw CLIError.usage("--format \(format.rawValue), but this is a \(detected.rawValue) envelope")
        }
        let report = Message.reporter(verbose)
        let plaintext: [UInt8]
        switch detected {
        case .countersign:
            let envelope = try MessageEnvelope(armored: text)
            let sender = try KeyFiles.publicKey(from)
            let me = try KeyFiles.identity(identity, keyOptions)
            let opened = try envelope.open(with: me, from: sender) { report($0.rawValue) }
            if verbose {
                Terminal.warn("from: \(opened.sender)")
                Terminal.warn("to: \(opened.recipients.map(\.description).joined(separator: ", "))")
                Terminal.warn("message ID: \(Hex.encode(opened.messageID))")
                Terminal.warn("created: \(opened.createdDate.formatted(.iso8601)) (\(opened.created) ms)")
                Terminal.warn("content type: \(opened.contentType)")
            }
            plaintext = opened.plaintext
        case .pingidentity:
            Terminal.warn(Message.pingIdentityWarning)
            let payload = try PingIdentityPayload(json: text)
            let sender = try KeyFiles.legacyRSAPublicKey(from)
            let me = try KeyFiles.legacyRSAKey(identity, keyOptions)
            plaintext = Array(try payload.open(with: me, from: sender) { report($0.rawValue) }.utf8)
        }
        FileHandle.standardOutput.write(Data(isatty(1) == 1 ? Array(Self.terminalSafe(plaintext).utf8) : plaintext))
    }

    private func readEnvelope() throws -> String {
        if let envelope, envelope != "-" { return envelope }
        guard
            let bytes = try PrefixedSource.readAll(
                FileDescriptorSource(fd: 0, owns: false),
                limit: MessageEnvelope.maxArmoredSize + 4096
            )
        else {
            throw MessageError.tooLarge(limit: MessageEnvelope.maxSize)
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CLIError.usage("not a message envelope: the input is not text")
        }
        return text
    }

    /// On a terminal, a sender's control characters (escape sequences) are shown escaped, not obeyed;
    /// line feeds, tabs and the carriage return of a CR LF pass.
    static func terminalSafe(_ bytes: [UInt8]) -> String {
        let scalars = Array(String(decoding: bytes, as: UTF8.self).unicodeScalars)
        var out = String.UnicodeScalarView()
        for (i, s) in scalars.enumerated() {
            let crlf = s == "\r" && i + 1 < scalars.count && scalars[i + 1] == "\n"
            if s == "\n" || s == "\t" || crlf {
                out.append(s)
            } else {
                out.append(contentsOf: Terminal.printable(String(s)).unicodeScalars)
            }
        }
        return String(out)
    }
}
