import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `countersign serve …` and `countersign admin …` run `countersign-server`, which holds the server and its
/// libraries so that this tool does not load them. It is looked for beside this binary (after symlinks).
enum ServerCommands {
    static let names: Set<String> = ["serve", "admin"]

    /// When `arguments` (without the program's name) name a server command, this process becomes
    /// `countersign-server` with the same arguments, or says why it cannot; otherwise it returns.
    static func forwardIfServerCommand(_ arguments: [String]) {
        var arguments = arguments
        if arguments.first == "help", arguments.count > 1, names.contains(arguments[1]) {
            arguments = Array(arguments.dropFirst()) + ["--help"]
        }
        guard let first = arguments.first, names.contains(first) else { return }
        guard let path = serverBinary() else {
            Terminal.warn(
                "Error: `countersign \(first)` runs countersign-server from beside this binary, and /proc/self/exe does not say where that is. Run countersign-server directly."
            )
            exit(69)  // EX_UNAVAILABLE
        }
        let argv = (["countersign-server"] + arguments).map { strdup($0) } + [nil]
        execv(path, argv)
        let reason = String(cString: strerror(errno))
        Terminal.warn(
            """
            Error: `countersign \(first)` runs countersign-server, which could not be started from \(path) (\(reason)). \
            Install countersign-server beside countersign, or run it directly.
            """
        )
        exit(69)  // EX_UNAVAILABLE
    }

    /// `countersign-server` in this executable's directory; nil when the kernel does not say where that is.
    /// Never from argv[0]: a bare or relative name would resolve against the current directory.
    static func serverBinary() -> String? {
        guard let me = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"), me.hasPrefix("/")
        else { return nil }
        return URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent("countersign-server").path
    }
}

/// Listed in `countersign --help`; `countersign serve …` never parses here (``ServerCommands``).
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the Countersign server (countersign-server serve; see countersign serve --help)."
    )

    func run() throws { throw CLIError.usage("countersign serve runs countersign-server serve") }
}

/// Listed in `countersign --help`; `countersign admin …` never parses here (``ServerCommands``).
struct AdminCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin",
        abstract: "Administer a Countersign database directly (countersign-server admin; see countersign admin --help)."
    )

    func run() throws { throw CLIError.usage("countersign admin runs countersign-server admin") }
}
