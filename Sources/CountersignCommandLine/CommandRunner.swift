import ArgumentParser
import Foundation

/// How `countersign` and `countersign-server` run their command line: the parser's errors, help and
/// version as the parser renders them; a `ValidationError` found while running (it needed the environment
/// or a configuration file) as a usage error of that command, EX_USAGE, never the root's usage; any other
/// error as `Error: …` and exit 1.
public enum CommandRunner {
    /// EX_USAGE (sysexits(3)): the command line is wrong and nothing was done.
    public static let usageExit: Int32 = 64

    /// Parses the process's arguments as `Root`'s and runs the command; never returns. `warn` writes a
    /// line to standard error; `printable` makes a validation message safe for the terminal; `describe`
    /// renders any other error (after `Error: `).
    public static func run<Root: ParsableCommand>(
        _ root: Root.Type,
        warn: @Sendable (String) -> Void,
        printable: @Sendable (String) -> String,
        describe: @Sendable (any Error) -> String
    ) async -> Never {
        let command: any ParsableCommand
        do {
            command = try Root.parseAsRoot(nil)
        } catch {
            Root.exit(withError: error)
        }
        do {
            if var async = command as? any AsyncParsableCommand {
                try await async.run()
            } else {
                var sync = command
                try sync.run()
            }
            Foundation.exit(EXIT_SUCCESS)
        } catch let error as ValidationError {
            let names = path(from: Root.self, to: type(of: command)) ?? [Root._commandName]
            warn(
                """
                Error: \(printable(error.message))
                Usage: \(Root.usageString(for: type(of: command)))
                  See '\(names.joined(separator: " ")) --help' for more information.
                """
            )
            Foundation.exit(usageExit)
        } catch let error where String(reflecting: type(of: error)).hasPrefix("ArgumentParser.") {
            Root.exit(withError: error)  // help, version, validation, exit codes: the parser's own rendering
        } catch {
            warn("Error: " + describe(error))
            Foundation.exit(EXIT_FAILURE)
        }
    }

    /// The command names from `root` down to `target` (`countersign account login`), if it is one of them.
    public static func path(from root: any ParsableCommand.Type, to target: any ParsableCommand.Type) -> [String]? {
        func walk(_ c: any ParsableCommand.Type, _ names: [String]) -> [String]? {
            if ObjectIdentifier(c) == ObjectIdentifier(target) { return names }
            for sub in c.configuration.subcommands {
                if let found = walk(sub, names + [sub._commandName]) { return found }
            }
            return nil
        }
        return walk(root, [root._commandName])
    }
}
