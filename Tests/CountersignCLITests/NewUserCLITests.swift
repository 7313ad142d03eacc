import CountersignTestSupport
import Foundation
import Testing

/// What a new user ran into (issue 19, 19) that needs no server (the rest, against a real `countersign
/// serve`, is in CountersignSystemTests/NewUserCLITests.swift).
@Suite struct NewUserCLITests {
    /// `countersign version` names the release and the commit the binary was built from: in a git checkout,
    /// the checkout's HEAD (with "-modified" when tracked files differ from it).
    @Test func versionNamesTheReleaseAndTheCommit() throws {
        let t = try CLI()
        let line = try t.cs("version").text.trimmingCharacters(in: .whitespacesAndNewlines)
        let release = try t.cs("--version").text.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(line.hasPrefix("countersign \(release) (commit "), "\(line)")
        let git = Process()
        git.executableURL = URL(fileURLWithPath: "/usr/bin/git")
        git.arguments = ["-C", CLI.packageRoot.path, "rev-parse", "HEAD"]
        let out = Pipe()
        git.standardOutput = out
        git.standardError = FileHandle.nullDevice
        guard (try? git.run()) != nil else { return }  // no git here: "unknown" is all a build can say
        git.waitUntilExit()
        guard git.terminationStatus == 0 else { return #expect(line.hasSuffix("(commit unknown)"), "\(line)") }
        let head = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(head.count == 40)
        #expect(
            line == "countersign \(release) (commit \(head))"
                || line == "countersign \(release) (commit \(head)-modified)",
            "\(line) vs \(head)"
        )
    }
}
