import ArgumentParser
import CountersignCrypto

/// `-r PUBKEY`, repeated: whom `seal` and `message seal` seal to. At least one is needed.
struct RecipientOptions: ParsableArguments {
    @Option(name: .short, help: ArgumentHelp("A recipient's public key file (repeat for more).", valueName: "pubkey"))
    var recipient: [String] = []

    func validate() throws {
        if recipient.isEmpty { throw ValidationError("name at least one recipient with -r PUBKEY") }
    }

    /// The recipients' public keys, read from their files.
    func publicKeys() throws -> [PublicKey] { try recipient.map(KeyFiles.publicKey) }
}
