import ArgumentParser
import Foundation

/// How `countersign` and `countersign-server` run their command line: the parser's errors, help and
/// version as the parser renders them; a `ValidationError` found while running (it needed the environment
/// or a configuration file) as a usage error of that command, EX_USAGE, never the root's usage; any other
/// error as `Error: …` and exit 1. A command line the parser refuses because a value starts with `-` (a
/// passkey's ID is base64url and may) also gets a hint to write `--` before it.
public enum CommandRunner {
    /// EX_USAGE (sysexits(3)): the command line is wrong and nothing was done.
    public static let usageExit: Int32 = 64

    /// Parses the process's arguments as `Root`'s and runs the command; never returns. `warn` writes a
    /// line to standard error; `printable` makes a validation message safe for the terminal; `describe`
    /// renders any other error (after `Error: `).
    public static func run<Root: ParsableCommand>(
        _ root: Root.Type,
        arguments: [String] = Array(CommandLine.arguments.dropFirst()),
        warn: @Sendable (String) -> Void,
        printable: @Sendable (String) -> String,
        describe: @Sendable (any Error) -> String
    ) async -> Never {
        let command: any ParsableCommand
        do {
            command = try Root.parseAsRoot(arguments)
        } catch {
            // Only when the parser says a positional value is missing, or names the token: a command's own
            // validation of an option's value (`--counter -1`) is not about `--`.
            let message = Root.message(for: error)
            if Root.exitCode(for: error) == .validationFailure,
                let value = valueReadAsOption(in: arguments),
                message.hasPrefix("Missing expected argument") || message.contains("'\(value)'")
            {
                warn(Root.fullMessage(for: error))
                warn(
                    "Hint: `\(value)` starts with '-', so it was read as an option. If it is a value "
                        + "(such as a passkey's ID), write `--` before it, after every option: all that follows "
                        + "`--` is read as values."
                )
                Foundation.exit(usageExit)
            }
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

    /// The first argument before any `--` that starts with `-` but cannot be an option's name: options are
    /// `-x`, `--lower-case-words` and `--name=value`, so `-Ab3_x…` or `-5` can only have been meant as a value.
    /// Only printable ASCII is considered (an ID's characters), so the hint can show it as it is.
    public static func valueReadAsOption(in arguments: [String]) -> String? {
        func isOptionName<S: StringProtocol>(_ name: S) -> Bool {
            guard let first = name.first, first.isASCII, first.isLetter else { return false }
            if name.count == 1 { return true }
            return name.allSatisfy { c in c == "-" || (c.isASCII && (c.isLowercase || c.isNumber)) }
        }
        for argument in arguments {
            if argument == "--" { return nil }
            guard argument.hasPrefix("-"), argument != "-",
                argument.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) })
            else { continue }
            if argument.hasPrefix("--") {
                let name = argument.dropFirst(2).prefix { $0 != "=" }
                if !isOptionName(name) || name.count == 1 { return argument }
            } else if !isOptionName(argument.dropFirst()) || argument.count > 2 {
                return argument  // the CLI has no grouped short flags
            }
        }
        return nil
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
