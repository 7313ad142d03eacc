import CountersignTestSupport
import Foundation
import Testing

/// `countersign admin demo-users N` (cryptology-project's demo users, without their shared password): strong
/// random passwords printed once, each a working sign-in; refused on a database with accounts unless forced.
@Suite struct DemoUsersTests {
    static let password = "[2-9A-HJKMNP-Z]{5}-[2-9A-HJKMNP-Z]{5}-[2-9A-HJKMNP-Z]{5}-[2-9A-HJKMNP-Z]{5}"

    static func lines(_ r: CLI.Output) -> [(String, String)] {
        r.text.split(separator: "\n").map {
            let p = $0.split(separator: " ")
            return (String(p.first ?? ""), p.count == 2 ? String(p[1]) : "")
        }
    }

    @Test func demoUsersGetStrongPasswordsShownOnceAndAUsedDatabaseIsRefused() async throws {
        let t = try CLI()
        let db = try ServeTests.database("sqlite", t)
        let server = try ServeTests.Server(database: db, in: t.dir)
        defer { _ = server.signal(SIGTERM) }

        let made = try t.cs("admin", "demo-users", "3", "--database", db)
        let users = Self.lines(made)
        #expect(made.status == 0 && users.map(\.0) == ["user1", "user2", "user3"], "\(made.text) \(made.stderr)")
        #expect(
            users.allSatisfy { $0.1.range(of: "^\(Self.password)$", options: .regularExpression) != nil },
            "\(made.text)"
        )
        #expect(Set(users.map(\.1)).count == 3, "each its own password")
        #expect(made.stderr.contains("created 3 demo accounts; their passwords are shown only here"), "\(made.stderr)")
        let file = try Data(contentsOf: URL(fileURLWithPath: String(db.dropFirst("sqlite:".count))))
        let wal =
            (try? Data(contentsOf: URL(fileURLWithPath: String(db.dropFirst("sqlite:".count)) + "-wal"))) ?? Data()
        for (_, password) in users {
            #expect(file.range(of: Data(password.utf8)) == nil && wal.range(of: Data(password.utf8)) == nil)
        }

        // Each password signs its account in on the running server; another account's does not.
        let login = { (user: String, password: String) throws -> CLI.Output in
            try t.write("pw-\(user)", Data((password + "\n").utf8))
            return try t.run(
                "/usr/bin/env",
                [
                    "COUNTERSIGN_CONFIG_DIR=\(t.path("cfg-\(user)"))", CLI.binary, "account", "login", user,
                    "--password-file", t.path("pw-\(user)"), "--server", server.url,
                ]
            )
        }
        let signedIn = try login("user2", users[1].1)
        #expect(signedIn.status == 0 && signedIn.text.hasPrefix("signed in as user2"), "\(signedIn.stderr)")
        #expect(try login("user1", users[1].1).status != 0)

        // A database with accounts: nothing is added without --force.
        let again = try t.cs("admin", "demo-users", "4", "--database", db)
        #expect(
            again.status != 0 && again.text.isEmpty
                && again.stderr.contains("already has accounts (user1, user2, user3)")
                && again.stderr.contains("nothing was created") && again.stderr.contains("--force"),
            "\(again.text) \(again.stderr)"
        )
        let forced = try t.cs("admin", "demo-users", "4", "--force", "--database", db)
        #expect(forced.status == 0 && Self.lines(forced).map(\.0) == ["user4"], "\(forced.text) \(forced.stderr)")
        #expect(forced.stderr.contains("already there, left unchanged: user1, user2, user3"), "\(forced.stderr)")
        #expect(try login("user3", users[2].1).status == 0, "an existing account keeps its password")

        // Counts out of range are usage errors, and no database is needed to say so.
        for bad in ["0", "1001", "many"] {
            let r = try t.cs("admin", "demo-users", bad, "--database", db)
            #expect(r.status == 64 && r.text.isEmpty, "\(bad): \(r.stderr)")
        }
        let missing = try t.cs("admin", "demo-users", "2", "--database", "sqlite:" + t.path("none.sqlite"))
        #expect(missing.status != 0 && missing.stderr.contains("nothing was created"), "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: t.path("none.sqlite")))
    }
}
