import ArgumentParser
import CountersignCrypto
import Foundation

/// Reading key files named on the command line, with errors that name the file.
enum KeyFiles {
    static func text(_ path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError.io("cannot read \(path): no such file or not readable")
        }
        guard data.count <= 1 << 20 else { throw CLIError.usage("\(path) is too large to be a key file") }
        guard let text = String(data: data, encoding: .utf8) else { throw CLIError.usage("\(path) is not a PEM text file") }
        return text
    }

    static func publicKey(_ path: String) throws -> PublicKey {
        do {
            return try PublicKey(pem: text(path))
        } catch let e as KeyError {
            throw CLIError.usage("\(path): \(e)")
        }
    }

    static func identity(_ path: String, passphraseFile: String?) throws -> Identity {
        try privateKey(path, passphraseFile: passphraseFile, hint: "", Identity.init(pem:passphrase:))
    }

    /// Reads a private key file, asking for its passphrase only if the file is encrypted; key errors name the file.
    static func privateKey<K>(_ path: String, passphraseFile: String?, hint: String,
                              _ parse: (String, () throws -> [UInt8]) throws -> K) throws -> K {
        let pem = try text(path)
        do {
            return try parse(pem) {
                if let passphraseFile { return try Terminal.passphrase(fromFile: passphraseFile) }
                return try Terminal.ask("Passphrase for \(path): ")
            }
        } catch let e as KeyError {
            throw CLIError.usage("\(path): \(e)\(hint)")
        }
    }
}

/// `--passphrase-file`, shared by the commands that read an identity.
struct PassphraseOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Read the key's passphrase from the first line of this file.", valueName: "file"))
    var passphraseFile: String?
}

extension KeyFiles {
    /// An RSA private key for the PingIdentity legacy payload.
    static func legacyRSAKey(_ path: String, passphraseFile: String?) throws -> LegacyRSAKey {
        try privateKey(path, passphraseFile: passphraseFile, hint: " (--format pingidentity takes RSA keys from `countersign keygen --rsa-legacy 1024`)",
                       LegacyRSAKey.init(pem:passphrase:))
    }

    static func legacyRSAPublicKey(_ path: String) throws -> LegacyRSAPublicKey {
        do {
            return try LegacyRSAPublicKey(pem: text(path))
        } catch let e as KeyError {
            throw CLIError.usage("\(path): \(e) (--format pingidentity takes RSA public keys)")
        }
    }
}
