import ArgumentParser
import CountersignClient
import CountersignCommandLine
import Foundation

#if canImport(Glibc)
import Glibc
#endif

@main
struct Countersign: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "countersign",
        abstract:
            "Private messages, private files and strong sign-in: keys, sealed files and messages, OTP, and the server.",
        discussion: """
            Make a key:          countersign keygen -o me.key > me.pub
            Seal to someone:     countersign seal -r them.pub -o report.pdf.cs report.pdf
            Open what you got:   countersign open -i me.key -o report.pdf report.pdf.cs
            FileLock app format: countersign seal --format filelock -r filelock.pem photo.jpg > encrypted_file.pkg
            Send a short text:   countersign message seal -r them.pub -s me.key "hello" > msg.txt
            Message someone:     countersign account login me --server URL; countersign device init
                                 countersign send --to them "hello"; countersign inbox; countersign read ID
            Second factor:       countersign account mfa pairing-key; countersign authenticator pair KEY (its own config dir)

            Config directory:    countersign --config-dir DIR COMMAND …  (or COUNTERSIGN_CONFIG_DIR=DIR; the default is \
            ~/.config/countersign). It holds one account session and one device or authenticator: use one per identity.
            """,
        version: CountersignClient.version,
        subcommands: [
            Keygen.self, Pubkey.self, Seal.self, Open.self, Message.self, OTPCommand.self, ServeCommand.self,
            AccountCommand.self, AdminCommand.self,
            DeviceCommand.self, SendCommand.self, InboxCommand.self, OutboxCommand.self, ReadCommand.self,
            CancelCommand.self,
            ContactsCommand.self, TrustCommand.self, VerifyCommand.self, SafetyNumberCommand.self, WatchCommand.self,
            AuthenticatorCommand.self,
            AgentCommand.self, VersionCommand.self,
        ]
    )

    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        switch configDirectory(in: arguments) {
        case .none: break
        case .some(.success(let (dir, rest))):
            // Every command finds its files through the variable (SessionFile.directory); the flag wins over it.
            setenv("COUNTERSIGN_CONFIG_DIR", dir, 1)
            setenv("COUNTERSIGN_CONFIG_DIR_FLAG", "1", 1)
            arguments = rest
        case .some(.failure(let message)):
            Terminal.warn("Error: \(message.text)")
            Foundation.exit(usageExit)
        }
        // Anywhere else (before a `--`, after which all is text) it is a misplaced flag, not an unknown one.
        if arguments.prefix(while: { $0 != "--" }).contains(where: {
            $0 == "--config-dir" || $0.hasPrefix("--config-dir=")
        }) {
            Terminal.warn(
                "Error: --config-dir goes before the command, once: countersign --config-dir DIR COMMAND … (or set COUNTERSIGN_CONFIG_DIR)"
            )
            Foundation.exit(usageExit)
        }
        ServerCommands.forwardIfServerCommand(arguments)
        #if canImport(Glibc)
        // swift-crypto returns every sealed or opened chunk in a fresh 64 KiB allocation. With glibc's
        // defaults each batch's memory is trimmed back to the kernel and faulted in again, which costs
        // as much as the AES itself; keeping freed memory in the heap removes that (RSS is unchanged,
        // the same few MiB are reused). Measured with scripts/bench-seal.sh.
        // Not for the server (countersign-server, another process image): its memory comes and goes with
        // connections and requests, and keeping 512 MiB of freed heap would hold the peak of every burst.
        // -1 is M_TRIM_THRESHOLD, -3 is M_MMAP_THRESHOLD.
        _ = glibcMallopt(-1, 512 << 20)
        _ = glibcMallopt(-3, 32 << 20)
        #endif
        if arguments.first == "help", let unknown = unknownCommand(in: Array(arguments.dropFirst())) {
            // The parser would show the root's help for a name it does not know, and exit 0.
            Terminal.warn(
                "Error: there is no command `\(Terminal.printable(unknown))`; `countersign help` lists the commands"
            )
            Foundation.exit(usageExit)
        }
        await CommandRunner.run(
            Countersign.self,
            arguments: arguments,
            warn: Terminal.warn,
            printable: { Terminal.printable($0) },
            describe: { error in
                // Errors carry server-supplied text (problem details, names): escaped, so that a server
                // cannot drive the terminal. Line breaks stay: they are the messages' own. A problem's
                // detail is the server's alone: not even a line break of it is kept.
                var serverText = false
                if case ClientError.problem = error { serverText = true }
                return Terminal.printable(String(describing: error), keepingLineBreaks: !serverText)
            }
        )
    }
}

extension Countersign {
    /// EX_USAGE (sysexits(3)): the command line is wrong and nothing was done. The parser exits with it
    /// for what it finds; errors found while running exit with 1.
    static let usageExit = CommandRunner.usageExit

    struct ConfigDirError: Error { var text: String }

    /// A leading `--config-dir DIR` or `--config-dir=DIR` (before the command, so that no command's own
    /// arguments, such as a message's text, are ever taken for it): the directory and the other arguments.
    static func configDirectory(in arguments: [String]) -> Result<(String, [String]), ConfigDirError>? {
        guard let first = arguments.first, first == "--config-dir" || first.hasPrefix("--config-dir=") else {
            return nil
        }
        let dir: String
        let rest: [String]
        if first == "--config-dir" {
            guard arguments.count > 1, !arguments[1].hasPrefix("-") else {
                return .failure(
                    ConfigDirError(text: "--config-dir needs a directory: countersign --config-dir DIR COMMAND …")
                )
            }
            (dir, rest) = (arguments[1], Array(arguments.dropFirst(2)))
        } else {
            (dir, rest) = (String(first.dropFirst("--config-dir=".count)), Array(arguments.dropFirst()))
        }
        guard !dir.isEmpty, !dir.contains("\u{0}") else {
            return .failure(
                ConfigDirError(text: "--config-dir needs a directory: countersign --config-dir DIR COMMAND …")
            )
        }
        return .success((dir, rest))
    }

    /// The first of `names` (after `help`) that is not a command at that place, if any.
    static func unknownCommand(in names: [String]) -> String? {
        var command: any ParsableCommand.Type = Countersign.self
        for name in names where !name.hasPrefix("-") {
            guard let sub = command.configuration.subcommands.first(where: { $0._commandName == name }) else {
                return (([Countersign._commandName] + names.prefix { $0 != name }) + [name]).joined(separator: " ")
            }
            command = sub
        }
        return nil
    }
}

#if canImport(Glibc)
/// glibc's `mallopt(3)`; <malloc.h> is not part of the Glibc module.
@_silgen_name("mallopt")
private func glibcMallopt(_ parameter: Int32, _ value: Int32) -> Int32
#endif
