import CountersignTestSupport
import Foundation
import Testing

/// `countersign admin backup` copies a served SQLite database consistently; the copy, put in place of the
/// database, serves the same accounts, devices and queued messages; and a backup never replaces a file
/// or leaves a partial one.
@Suite struct BackupTests {
    typealias Dir = MessagingCLITests.Device

    @Test func aBackupOfAServedDatabaseRestoresAccountsDevicesAndQueuedMessages() async throws {
        var (t, server, d) = try MessagingCLITests.setUp(["alice", "bob"])
        let (alice, bob) = (d["alice"]!, d["bob"]!)
        let database = "sqlite:" + t.path("m.sqlite")
        let before = try MessagingCLITests.sentID(try alice.cs("send", "--to", "bob", "queued before the backup"))

        // Taken while the server runs, with sends going on beside it.
        let sending = Task.detached {
            (0..<5).map { i in (try? alice.cs("send", "--to", "bob", "during \(i)"))?.status ?? -1 }
        }
        let backup = try t.cs("admin", "backup", "--database", database, t.path("backup.sqlite"))
        #expect(backup.status == 0, "\(backup.stderr)")
        #expect(backup.text.contains("2 accounts") && backup.text.contains("2 devices"), "\(backup.text)")
        #expect(await sending.value.allSatisfy { $0 == 0 })
        let attributes = try FileManager.default.attributesOfItem(atPath: t.path("backup.sqlite"))
        #expect((attributes[.posixPermissions] as? Int) == 0o600, "it holds password hashes")
        let after = try MessagingCLITests.sentID(try alice.cs("send", "--to", "bob", "sent after the backup"))

        // An existing file is never replaced, a missing directory is said, and neither leaves a file.
        let size = attributes[.size] as? Int
        let again = try t.cs("admin", "backup", "--database", database, t.path("backup.sqlite"))
        #expect(again.status != 0 && again.stderr.contains("already exists"), "\(again.stderr)")
        #expect((try FileManager.default.attributesOfItem(atPath: t.path("backup.sqlite"))[.size] as? Int) == size)
        let nowhere = try t.cs("admin", "backup", "--database", database, t.path("missing/backup.sqlite"))
        #expect(nowhere.status != 0 && nowhere.stderr.contains("cannot write in"), "\(nowhere.stderr)")
        let missing = try t.cs("admin", "backup", "--database", "sqlite:" + t.path("none.sqlite"), t.path("x.sqlite"))
        #expect(missing.status != 0 && missing.stderr.contains("no database at"), "\(missing.stderr)")
        let postgres = try t.cs("admin", "backup", "--database", "postgres://u@127.0.0.1/db", t.path("pg.dump"))
        #expect(postgres.status != 0 && postgres.stderr.contains("pg_dump"), "\(postgres.stderr)")
        // A name SQLite would read as a URI is still this file, whole (run where the name is relative).
        let uri = try t.run(
            "/bin/sh",
            [
                "-c", "cd \"$1\" && \"$2\" admin backup --database \"$3\" file:uri.sqlite", "sh", t.dir.path,
                CLI.binary, database,
            ]
        )
        #expect(uri.status == 0, "\(uri.stderr)")
        let uriSize = try FileManager.default.attributesOfItem(atPath: t.path("file:uri.sqlite"))[.size] as? Int ?? 0
        #expect(uriSize > 4096, "\(uriSize) bytes")
        let left = try FileManager.default.contentsOfDirectory(atPath: t.dir.path)
        #expect(
            !left.contains {
                $0.contains("partial") || $0 == "x.sqlite" || $0 == "pg.dump" || $0.hasPrefix("uri.sqlite")
            },
            "\(left)"
        )

        // Restore: the server stopped, the copy in place of its database (the old WAL gone with it), the
        // server started again on the same address, so the CLIs' saved sessions name it.
        let port = try #require(URL(string: server.url)?.port)
        #expect(server.signal(SIGTERM) == 0)
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: t.path("m.sqlite") + suffix) }
        try FileManager.default.copyItem(atPath: t.path("backup.sqlite"), toPath: t.path("m.sqlite"))
        server = try ServeTests.Server(database: database, in: t.dir, captcha: "off", port: port)
        defer { _ = server.signal(SIGTERM) }

        // Bob's device and session are there, with the message queued before the backup and not the later one.
        let inbox = try bob.cs("inbox")
        #expect(
            inbox.status == 0 && inbox.text.contains(before) && !inbox.text.contains(after),
            "\(inbox.text) \(inbox.stderr)"
        )
        let read = try bob.cs("read", before)
        #expect(read.status == 0 && read.text == "queued before the backup", "\(read.stderr)")
        // Alice's account and password are there: she signs in again.
        try MessagingCLITests.login(alice, "alice", server)
        #expect(try alice.cs("send", "--to", "bob", "after the restore").status == 0)
    }
}
