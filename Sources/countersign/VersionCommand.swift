import ArgumentParser
import CountersignClient

/// `countersign version`: the release and the commit it was built from (`--version` prints the release
/// alone, for scripts).
struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "version",
        abstract: "Print the version and the commit this build comes from."
    )

    static var text: String { "countersign \(CountersignClient.version) (commit \(BuildInfo.commit))" }

    func run() throws {
        print(Self.text)
    }
}
