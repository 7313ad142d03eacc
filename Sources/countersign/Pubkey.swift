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

    @OptionGroup var passphrase: PassphraseOption

    @Argument(help: ArgumentHelp("A private key file, or a public key file in either form.", valueName: "keyfile"))
    var keyFile: String

    func run() throws {
        let text = try KeyFiles.text(keyFile)
        let key: PublicKey
        if let pub = try? PublicKey(pem: text) {
            key = pub
        } else {
            key = try KeyFiles.identity(keyFile, passphraseFile: passphrase.passphraseFile).publicKey
        }
        print(key.pem(format), terminator: "")
        Terminal.warn("fingerprint: \(key.fingerprint)")
    }
}
