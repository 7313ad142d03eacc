import CountersignTestSupport
import Foundation
import Testing

/// What `countersign account` checks before it talks to a server (none runs here: port 9 refuses).
@Suite struct AccountInputTests {
    static let rule =
        "username: 3 to 32 characters of a-z, 0-9, '.', '_' and '-', starting and ending with a letter or digit"

    /// A 100,000-character username once reached the server and came back as "The body exceeds 65536 bytes."
    @Test func usernamesAreCheckedLocallyWithTheServersRule() throws {
        let t = try CLI()
        try t.write("pw", Data("correct horse battery\n".utf8))
        for username in [
            String(repeating: "a", count: 100_000), "ab", "a!b", "alice-", "alice.", "ålice", "alice bob", "",
        ] {
            for command in [
                ["account", "login", username], ["account", "register", username, "--name", "A", "--lastname", "L"],
            ] {
                let r = try t.run(CLI.binary, command + ["--password-file", "pw", "--server", "http://127.0.0.1:9"])
                #expect(r.status != 0, "\(command[1]) \(username.prefix(20))")
                #expect(r.stderr.contains(Self.rule), "\(command[1]) \(username.prefix(20)): \(r.stderr.prefix(300))")
                #expect(
                    !r.stderr.contains("cannot reach") && !r.stderr.contains("body exceeds"),
                    "refused before any request: \(r.stderr.prefix(300))"
                )
            }
        }
        // Valid names (upper case is folded, as on the server) get as far as the network.
        for username in ["alice", "Alice.B-2", "a_b"] {
            let r = try t.cs("account", "login", username, "--password-file", "pw", "--server", "http://127.0.0.1:9")
            #expect(r.status != 0 && r.stderr.contains("cannot reach the server"), "\(username): \(r.stderr)")
        }
    }
}
