import ArgumentParser
import CountersignCrypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

struct Keygen: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make a P-256 identity (or a legacy RSA key).",
        discussion: """
            The private key is PKCS#8 PEM, encrypted with scrypt and AES-256 unless --no-passphrase, so \
            `openssl pkey` reads it too. With -o it goes to that file (mode 0600) and the public key (SPKI PEM) \
            to standard output; without -o the private key goes to standard output and the public key to \
            standard error. The fingerprint always goes to standard error.
            """
    )

    @Option(
        name: .short,
        help: ArgumentHelp(
            "Write the private key to this file (mode 0600; an existing one only with --force).",
            valueName: "file"
        )
    )
    var output: String?

    @Flag(
        name: .long,
        help: "Replace the -o file if it exists (atomically: the old key stays until the new one is complete)."
    )
    var force = false

    @Option(
        name: .long,
        help: ArgumentHelp("Read the new passphrase from the first line of this file.", valueName: "file")
    )
    var passphraseFile: String?

    @Flag(name: .long, help: "Store the private key unencrypted.")
    var noPassphrase = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Make an RSA key of this size for the PingIdentity legacy payload (1024 is weak).",
            valueName: "bits"
        )
    )
    var rsaLegacy: Int?

    func validate() throws {
        if noPassphrase, passphraseFile != nil {
            throw ValidationError("--no-passphrase and --passphrase-file exclude each other")
        }
        if let bits = rsaLegacy, !LegacyRSAKey.allowedBits.contains(bits) {
            throw ValidationError(KeyError.unsupportedRSASize(bits).description)
        }
        if force, output == nil {
            throw ValidationError("--force replaces the -o file; without -o the key goes to standard output")
        }
    }

    func run() throws {
        // Refuse an existing OUT before asking for a passphrase; it is replaced only at commit.
        let file = try output.map { try AtomicOutput(path: $0, force: force) }
        let passphrase = try newPassphrase()
        let privatePEM: String
        let publicPEM: String
        let fingerprint: Fingerprint
        if let bits = rsaLegacy {
            let key = try LegacyRSAKey.generate(bits: bits)
            if bits < 2048 {
                Terminal.warn("warning: RSA-\(bits) is weak; use it only to talk to the PingIdentity app")
            }
            privatePEM = try key.pem(passphrase: passphrase)
            publicPEM = key.publicKeyPEM + "\n"
            fingerprint = key.fingerprint
        } else {
            let identity = Identity.generate()
            privatePEM = try identity.pem(passphrase: passphrase)
            publicPEM = identity.publicKey.pem(.spki)
            fingerprint = identity.publicKey.fingerprint
        }
        if let file {
            try file.sink.write(Array(privatePEM.utf8))
            try file.commit()
            print(publicPEM, terminator: "")
        } else {
            print(privatePEM, terminator: "")
            FileHandle.standardError.write(Data(publicPEM.utf8))
        }
        Terminal.warn("fingerprint: \(fingerprint)")
    }

    private func newPassphrase() throws -> [UInt8]? {
        try Terminal.newPassphrase(
            file: passphraseFile,
            none: noPassphrase,
            prompt: "New passphrase: ",
            what: "the key",
            unchanged: "nothing was written"
        )
    }
}
