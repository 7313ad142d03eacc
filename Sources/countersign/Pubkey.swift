import ArgumentParser
import CountersignCrypto

extension PublicKey.Format: ExpressibleByArgument {}

struct Pubkey: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the public key of a private key file (or convert a public key file).",
        discussion: "--format filelock writes the raw-point PEM the FileLock iOS app reads and writes."
    )

    @Option(name: .long, help: "spki (standard, as OpenSSL) or filelock.")
    var format: PublicKey.Format = .spki

    @OptionGroup var keyOptions: PrivateKeyOptions

    @Argument(help: ArgumentHelp("A private key file, or a public key file in either form.", valueName: "keyfile"))
    var keyFile: String

    func run() throws {
        // Read once: the file may be a pipe.
        let file = try KeyFiles.load(keyFile)
        let key: PublicKey
        if let pub = try? PublicKey(pem: file.text) {
            key = pub
        } else {
            key = try KeyFiles.identity(file, keyOptions).publicKey
        }
        print(key.pem(format), terminator: "")
        Terminal.warn("fingerprint: \(key.fingerprint)")
    }
}
