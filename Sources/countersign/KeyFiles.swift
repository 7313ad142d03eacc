import ArgumentParser
import CountersignCrypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Reading key files named on the command line, with errors that name the file.
enum KeyFiles {
    /// Key files are small; anything larger is not one, and is not read into memory whole.
    static let maxKeyFile = 1 << 20

    /// A key file's text, and its mode when group or others may access it.
    struct Loaded {
        var path: String
        var text: String
        /// Set for a regular file whose mode grants group or others anything; nil otherwise (pipes too).
        var exposedMode: mode_t?
    }

    /// Reads the file as a stream (so `<(…)` and /dev/stdin work, once). The mode comes from the
    /// descriptor that is read, so the file checked is the file used.
    static func load(_ path: String) throws -> Loaded {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CLIError.io("cannot read \(path): \(String(cString: strerror(errno)))") }
        let source = FileDescriptorSource(fd: fd, owns: true)
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw CLIError.io("cannot read \(path): \(String(cString: strerror(errno)))") }
        guard (st.st_mode & S_IFMT) != S_IFDIR else { throw CLIError.io("\(path) is a directory, not a key file") }
        let exposed = (st.st_mode & S_IFMT) == S_IFREG && st.st_mode & 0o077 != 0 ? st.st_mode & 0o777 : nil
        guard let data = try PrefixedSource.readAll(source, limit: maxKeyFile) else {
            throw CLIError.usage("\(path) is too large to be a key file")
        }
        guard let text = String(validating: data, as: UTF8.self) else {
            throw CLIError.usage("\(path) is not a PEM text file")
        }
        return Loaded(path: path, text: text, exposedMode: exposed)
    }

    static func text(_ path: String) throws -> String { try load(path).text }

    static func publicKey(_ path: String) throws -> PublicKey {
        do {
            return try PublicKey(pem: text(path))
        } catch let e as KeyError {
            throw CLIError.usage("\(path): \(e)")
        }
    }

    static func identity(_ path: String, _ options: PrivateKeyOptions) throws -> Identity {
        try identity(load(path), options)
    }

    static func identity(_ file: Loaded, _ options: PrivateKeyOptions) throws -> Identity {
        try privateKey(file, options, Identity.init(pem:passphrase:))
    }

    /// Parses a private key file, asking for its passphrase only if the file is encrypted; key errors name
    /// the file. A key file that group or others can access is refused unless --insecure-key-permissions,
    /// as OpenSSH refuses one: a key others could read is no longer private, and one others could write
    /// could have been replaced. The check runs once the file is known to hold a private key (a public
    /// key given by mistake is named as such) and before any passphrase is asked for.
    static func privateKey<K>(
        _ file: Loaded,
        _ options: PrivateKeyOptions,
        _ parse: (String, () throws -> [UInt8]) throws -> K
    ) throws -> K {
        func checkPermissions() throws {
            guard let mode = file.exposedMode, !options.insecureKeyPermissions else { return }
            throw CLIError.usage(
                """
                \(file.path) is a private key file that group or others can access (mode 0\(String(mode, radix: 8))); \
                protect it with `chmod 600 \(file.path)`, or pass --insecure-key-permissions to use it anyway
                """
            )
        }
        let key: K
        do {
            key = try parse(file.text) {
                try checkPermissions()
                if let passphraseFile = options.passphraseFile {
                    return try Terminal.passphrase(fromFile: passphraseFile)
                }
                return try Terminal.ask("Passphrase for \(file.path): ")
            }
        } catch let e as KeyError {
            throw CLIError.usage("\(file.path): \(e)")
        }
        try checkPermissions()
        return key
    }
}

/// How the commands that read a private key find its passphrase and treat its permissions.
struct PrivateKeyOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Read the key's passphrase from the first line of this file (a pipe or /dev/stdin works).",
            valueName: "file"
        )
    )
    var passphraseFile: String?

    @Flag(
        name: .long,
        help: "Use a private key file that group or others can access (refused by default, as OpenSSH does)."
    )
    var insecureKeyPermissions = false
}

extension KeyFiles {
    /// An RSA private key for the PingIdentity legacy payload.
    static func legacyRSAKey(_ path: String, _ options: PrivateKeyOptions) throws -> LegacyRSAKey {
        try privateKey(load(path), options, LegacyRSAKey.init(pem:passphrase:))
    }

    static func legacyRSAPublicKey(_ path: String) throws -> LegacyRSAPublicKey {
        do {
            return try LegacyRSAPublicKey(pem: text(path))
        } catch let e as KeyError {
            throw CLIError.usage("\(path): \(e)")
        }
    }
}
