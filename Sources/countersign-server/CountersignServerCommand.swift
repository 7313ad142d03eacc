import ArgumentParser
import CountersignAPI
import CountersignCommandLine
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
        await CommandRunner.run(
            CountersignServerCommand.self,
            warn: { FileHandle.standardError.write(Data(($0 + "\n").utf8)) },
            printable: { $0 },
            describe: { String(describing: $0) }
        )
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
