import CountersignTestSupport
import Foundation
import Testing

/// What a user sees: exit codes, messages, and files that appear only when complete.
@Suite struct CommandTests {
    /// Alice (passphrase) and Bob (none), and a 200 KB file.
    static func setUp() throws -> (CLI, Data) {
        let t = try CLI()
        try t.write("pass", Data("alice pass\n".utf8))
        try t.write("alice.pub", try t.cs("keygen", "-o", "alice.key", "--passphrase-file", "pass").stdout)
        try t.write("bob.pub", try t.cs("keygen", "-o", "bob.key", "--no-passphrase").stdout)
        try t.write("carol.pub", try t.cs("keygen", "-o", "carol.key", "--no-passphrase").stdout)
        let data = CLI.random(200_000)
        try t.write("data", data)
        return (t, data)
    }

    @Test func stdinToStdoutRoundTripAndSignedStdout() throws {
        let (t, data) = try Self.setUp()
        let sealed = try t.cs("seal", "-r", "bob.pub", "-s", "alice.key", "--passphrase-file", "pass", stdin: data)
        #expect(sealed.status == 0, "\(sealed.stderr)")
        let opened = try t.cs("open", "-i", "bob.key", "--from", "alice.pub", stdin: sealed.stdout)
        #expect(opened.status == 0, "\(opened.stderr)")
        #expect(opened.stdout == data)
        // A signed file with its last byte flipped: to stdout, not one byte is written.
        var bad = sealed.stdout
        bad[bad.count - 1] ^= 1
        let refused = try t.cs("open", "-i", "bob.key", stdin: bad)
        #expect(refused.status != 0)
        #expect(refused.stdout.isEmpty)
        try t.write("bad.cs", bad)
        let refusedFile = try t.cs("open", "-i", "bob.key", "bad.cs")
        #expect(refusedFile.status != 0 && refusedFile.stdout.isEmpty)
    }

    @Test func failedOpenLeavesNothingAtOut() throws {
        let (t, _) = try Self.setUp()
        #expect(try t.cs("seal", "-r", "bob.pub", "-o", "data.cs", "data").status == 0)
        var bad = t.read("data.cs")!
        bad[bad.count - 100] ^= 1
        try t.write("bad.cs", bad)
        let before = t.listing()
        let r = try t.cs("open", "-i", "bob.key", "-o", "out", "bad.cs")
        #expect(r.status == 1)
        #expect(r.stderr.contains("tampered"))
        #expect(!t.exists("out"))
        #expect(t.listing() == before, "no temporary file left behind")
        // Truncated at a chunk boundary.
        try t.write("cut.cs", t.read("data.cs")!.prefix(189 + 65552))
        let cut = try t.cs("open", "-i", "bob.key", "-o", "out", "cut.cs")
        #expect(cut.status == 1 && cut.stderr.contains("truncated") && !t.exists("out"))
    }

    /// To stdout an unsigned file streams its authenticated chunks (SPEC §4.6); a failure after them must
    /// say how much was written, not "nothing was written".
    @Test func failedOpenToStdoutSaysHowMuchWasWritten() throws {
        let (t, data) = try Self.setUp()
        #expect(try t.cs("seal", "-r", "bob.pub", "-o", "data.cs", "data").status == 0)
        let sealed = t.read("data.cs")!
        // Cut inside the second chunk: the first (65,534 bytes after the name prefix) verifies and is written.
        try t.write("cut.cs", sealed.prefix(189 + 65552 + 1000))
        let cut = try t.cs("open", "-i", "bob.key", "cut.cs")
        #expect(cut.status == 1)
        #expect(cut.stdout == data.prefix(65534))
        #expect(
            cut.stderr.contains(
                "65534 bytes of authenticated plaintext were written to standard output before the failure; that output is incomplete"
            ),
            "\(cut.stderr)"
        )
        #expect(!cut.stderr.contains("nothing was written"), "\(cut.stderr)")
        // Tampered in the third chunk: two chunks out.
        var bad = sealed
        bad[189 + 2 * 65552 + 10] ^= 1
        let tampered = try t.cs("open", "-i", "bob.key", stdin: bad)
        #expect(tampered.status == 1 && tampered.stdout == data.prefix(65534 + 65536))
        #expect(
            tampered.stderr.contains("tampered") && tampered.stderr.contains("131070 bytes of authenticated plaintext"),
            "\(tampered.stderr)"
        )
        // Where nothing was written, that is what it says: a failed first chunk, -o, or a signed file.
        var first = sealed
        first[200] ^= 1
        let none = try t.cs("open", "-i", "bob.key", stdin: first)
        #expect(
            none.status == 1 && none.stdout.isEmpty && none.stderr.contains("; nothing was written"),
            "\(none.stderr)"
        )
        let toFile = try t.cs("open", "-i", "bob.key", "-o", "out", "cut.cs")
        #expect(
            toFile.status == 1 && toFile.stderr.contains("nothing was written to out") && !t.exists("out"),
            "\(toFile.stderr)"
        )
        #expect(try t.cs("seal", "-r", "bob.pub", "-s", "carol.key", "-o", "signed.cs", "data").status == 0)
        let signedCut = try t.cs("open", "-i", "bob.key", stdin: t.read("signed.cs")!.prefix(189 + 65552 + 1000))
        #expect(
            signedCut.status == 1 && signedCut.stdout.isEmpty && signedCut.stderr.contains("; nothing was written"),
            "\(signedCut.stderr)"
        )
    }

    @Test func notForThisKeyNamesFingerprints() throws {
        let (t, _) = try Self.setUp()
        #expect(try t.cs("seal", "-r", "bob.pub", "-r", "alice.pub", "-o", "data.cs", "data").status == 0)
        let bobFP = try t.cs("pubkey", "bob.pub").stderr.components(separatedBy: "fingerprint: ")[1].trimmingCharacters(
            in: .newlines
        )
        let r = try t.cs("open", "-i", "carol.key", "-o", "out", "data.cs")
        #expect(r.status == 1)
        #expect(r.stderr.contains("not sealed to this key"))
        #expect(r.stderr.contains(bobFP))
        #expect(!t.exists("out"))
    }

    @Test func existingOutputIsKeptUnlessForced() throws {
        let (t, data) = try Self.setUp()
        #expect(try t.cs("seal", "-r", "bob.pub", "-o", "data.cs", "data").status == 0)
        try t.write("out", Data("precious".utf8))
        let r = try t.cs("open", "-i", "bob.key", "-o", "out", "data.cs")
        #expect(r.status != 0 && r.stderr.contains("already exists"))
        #expect(t.read("out") == Data("precious".utf8))
        #expect(try t.cs("open", "-i", "bob.key", "-o", "out", "--force", "data.cs").status == 0)
        #expect(t.read("out") == data)
    }

    @Test func wrongPassphraseAndBadKeysSayWhich() throws {
        let (t, _) = try Self.setUp()
        try t.write("wrong", Data("not it\n".utf8))
        let r = try t.cs("seal", "-r", "bob.pub", "-s", "alice.key", "--passphrase-file", "wrong", "-o", "x.cs", "data")
        #expect(r.status != 0 && r.stderr.contains("wrong passphrase"))
        #expect(!t.exists("x.cs"))
        let p384 = try t.cs("seal", "-r", "\(CLI.fixtures)/p384.pub.pem", "-o", "x.cs", "data")
        #expect(p384.status != 0 && p384.stderr.contains("P-384"))
        let rsa = try t.cs("seal", "-r", "\(CLI.fixtures)/rsa1024.pub.pem", "-o", "x.cs", "data")
        #expect(rsa.status != 0 && rsa.stderr.contains("RSA"))
        try t.write("garbage.pem", Data("-----BEGIN PUBLIC KEY-----\nnot base64!\n-----END PUBLIC KEY-----\n".utf8))
        let garbage = try t.cs("seal", "-r", "garbage.pem", "-o", "x.cs", "data")
        #expect(garbage.status != 0 && garbage.stderr.contains("malformed PEM"))
        try t.write("trunc.pem", Data(String(decoding: t.read("bob.pub")!, as: UTF8.self).prefix(60).utf8))
        let trunc = try t.cs("seal", "-r", "trunc.pem", "-o", "x.cs", "data")
        #expect(trunc.status != 0 && trunc.stderr.contains("END"))
        #expect(!t.exists("x.cs"))
    }

    @Test func signatureMissingAndWrongSender() throws {
        let (t, _) = try Self.setUp()
        #expect(try t.cs("seal", "-r", "bob.pub", "-o", "plain.cs", "data").status == 0)
        let missing = try t.cs("open", "-i", "bob.key", "--from", "alice.pub", "-o", "out", "plain.cs")
        #expect(missing.status == 1 && missing.stderr.contains("signature missing") && !t.exists("out"))
        #expect(try t.cs("seal", "-r", "bob.pub", "-s", "carol.key", "-o", "carol.cs", "data").status == 0)
        let wrong = try t.cs("open", "-i", "bob.key", "--from", "alice.pub", "-o", "out", "carol.cs")
        #expect(wrong.status == 1 && wrong.stderr.contains("signature invalid") && !t.exists("out"))
    }

    @Test func formatDetectionVersionAndName() throws {
        let (t, _) = try Self.setUp()
        try t.write("junk", Data("hello there, not sealed".utf8))
        let junk = try t.cs("open", "-i", "bob.key", "junk")
        #expect(junk.status == 1 && junk.stderr.contains("unknown format"))
        #expect(try t.cs("seal", "-r", "bob.pub", "--keep-name", "-o", "data.cs", "data").status == 0)
        var v2 = t.read("data.cs")!
        v2[8] = 2
        try t.write("v2.cs", v2)
        let newer = try t.cs("open", "-i", "bob.key", "v2.cs")
        #expect(newer.status == 1 && newer.stderr.contains("upgrade"))
        let named = try t.cs("open", "-i", "bob.key", "-o", "out", "data.cs")
        #expect(named.stderr.contains("file name: data"))
        let fl = try t.cs("seal", "--format", "filelock", "-r", "bob.pub", "-r", "alice.pub", "-o", "x", "data")
        #expect(fl.status != 0 && fl.stderr.contains("exactly one recipient"))
    }

    @Test func killedOpenLeavesNoPartialOrTemporaryFile() throws {
        let (t, _) = try Self.setUp()
        let big = CLI.random(40 << 20)
        try t.write("big", big)
        #expect(try t.cs("seal", "-r", "bob.pub", "-o", "big.cs", "big").status == 0)
        let before = t.listing()
        for delay in [0.05, 0.2, 0.5] {
            let p = try Spawned(
                CLI.binary,
                ["open", "-i", "bob.key", "-o", "out", "big.cs"],
                directory: t.dir.path,
                stderr: .null
            )
            Thread.sleep(forTimeInterval: delay)
            p.signal(SIGKILL)
            p.wait()
            // Either the run finished (complete OUT) or nothing at all is left: never a partial OUT or a temp file.
            if t.exists("out") {
                #expect(t.read("out") == big)
                try FileManager.default.removeItem(atPath: t.path("out"))
            }
            #expect(t.listing() == before, "after SIGKILL at \(delay) s")
        }
    }
}
