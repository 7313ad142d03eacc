import ArgumentParser
import CountersignAPI
import Foundation

/// `countersign-server`: the server and the administration of its database, apart from the `countersign`
/// command-line tool so that the tool does not load the server's libraries (`countersign serve` and
/// `countersign admin` run this binary when it is installed beside it).
@main
struct CountersignServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "countersign-server",
        abstract: "The Countersign server: accounts, the end-to-end encrypted relay, push, MFA and the web client.",
        discussion: """
            Run it:            countersign-server serve --database sqlite:/var/lib/countersign/countersign.sqlite
            With a file:       countersign-server serve --config /etc/countersign/config.json
            Back up (SQLite):  countersign-server admin backup --database sqlite:PATH FILE
            """,
        version: CountersignRelease.version,
        subcommands: [Serve.self, Admin.self, ServerVersionCommand.self]
    )

    static func main() async {
        let command: any ParsableCommand
        do {
            command = try parseAsRoot(nil)
        } catch {
            exit(withError: error)
        }
        do {
            if var async = command as? any AsyncParsableCommand {
                try await async.run()
            } else {
                var sync = command
                try sync.run()
            }
        } catch let error as ValidationError {
            // Found while running (it needed the environment or the configuration file): a usage error all
            // the same, EX_USAGE as the parser exits with for those it finds.
            let names = path(to: type(of: command)) ?? ["countersign-server"]
            FileHandle.standardError.write(
                Data(
                    """
                    Error: \(error.message)
                    Usage: \(usageString(for: type(of: command)))
                      See '\(names.joined(separator: " ")) --help' for more information.

                    """.utf8
                )
            )
            Foundation.exit(64)
        } catch let error where String(reflecting: type(of: error)).hasPrefix("ArgumentParser.") {
            exit(withError: error)
        } catch {
            FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
            Foundation.exit(EXIT_FAILURE)
        }
    }
}

extension CountersignServerCommand {
    /// `countersign-server …` down to `target`.
    static func path(to target: any ParsableCommand.Type) -> [String]? {
        func walk(_ c: any ParsableCommand.Type, _ names: [String]) -> [String]? {
            if ObjectIdentifier(c) == ObjectIdentifier(target) { return names }
            for sub in c.configuration.subcommands {
                if let found = walk(sub, names + [sub._commandName]) { return found }
            }
            return nil
        }
        return walk(Self.self, [Self._commandName])
    }
}

/// `countersign-server version`: the release and the commit the build comes from.
struct ServerVersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "version",
        abstract: "Print the version and the commit this build comes from."
    )

    func run() throws {
        print("countersign-server \(CountersignRelease.version) (commit \(BuildInfo.commit))")
    }
}
