import CountersignTestSupport
import Foundation
import Testing

/// Private key files, passphrase files and the messages about them, as a user meets them.
@Suite struct KeyFileTests {
    /// Alice's key is encrypted ("alice pass"), Bob's is not; both 0600 as keygen writes them.
    static func setUp() throws -> CLI {
        let t = try CLI()
        try t.write("pass", Data("alice pass\n".utf8))
        try t.write("alice.pub", try t.cs("keygen", "-o", "alice.key", "--passphrase-file", "pass").stdout)
        try t.write("bob.pub", try t.cs("keygen", "-o", "bob.key", "--no-passphrase").stdout)
        try t.write("data", Data("sealed for bob\n".utf8))
        return t
    }

    /// Every `--flag` a message names, so a test can check the command has it.
    static func flags(in message: String) -> Set<String> {
        var found = Set<String>()
        var rest = Substring(message)
        while let r = rest.range(of: "--") {
            let name = rest[r.upperBound...].prefix { $0.isLetter || $0 == "-" }
            if !name.isEmpty { found.insert("--" + name) }
            rest = rest[r.upperBound...]
        }
        return found
    }

    static func expectFlagsExist(
        _ t: CLI,
        _ message: String,
        in command: [String],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let help = try t.run(CLI.binary, command + ["--help"]).text
        let named = flags(in: message)
        #expect(!named.isEmpty, "the message names a flag: \(message)", sourceLocation: sourceLocation)
        for flag in named {
            #expect(
                help.contains(flag),
                "\(command.joined(separator: " ")) has no \(flag), but the message names it: \(message)",
                sourceLocation: sourceLocation
            )
        }
    }

    @Test func privateKeysOthersCanAccessAreRefusedUnlessAllowed() throws {
        let t = try Self.setUp()
        #expect(try t.mode("bob.key") == 0o600)
        #expect(try t.cs("seal", "-r", "bob.pub", "-o", "data.cs", "data").status == 0)
        for mode in [0o644, 0o640, 0o604, 0o620, 0o660] {
            try t.chmod("bob.key", mode)
            let r = try t.cs("open", "-i", "bob.key", "data.cs")
            #expect(r.status != 0 && r.stdout.isEmpty, "mode \(String(mode, radix: 8))")
            #expect(
                r.stderr.contains(
                    "bob.key is a private key file that group or others can access (mode 0\(String(mode, radix: 8)))"
                ),
                "\(r.stderr)"
            )
            #expect(
                r.stderr.contains("chmod 600 bob.key") && r.stderr.contains("--insecure-key-permissions"),
                "\(r.stderr)"
            )
            try Self.expectFlagsExist(t, r.stderr, in: ["open"])
            let allowed = try t.cs("open", "-i", "bob.key", "--insecure-key-permissions", "data.cs")
            #expect(allowed.status == 0 && allowed.text == "sealed for bob\n", "\(allowed.stderr)")
        }
        for mode in [0o600, 0o400] {
            try t.chmod("bob.key", mode)
            let r = try t.cs("open", "-i", "bob.key", "data.cs")
            #expect(r.status == 0 && r.text == "sealed for bob\n", "mode \(String(mode, radix: 8)): \(r.stderr)")
        }
        // Every command that reads a private key checks it; pubkey too, but not on a public key.
        try t.chmod("bob.key", 0o644)
        try t.chmod("bob.pub", 0o644)
        for args in [
            ["pubkey", "bob.key"], ["seal", "-r", "bob.pub", "-s", "bob.key", "-o", "x.cs", "data"],
            ["message", "seal", "-r", "bob.pub", "-s", "bob.key", "hi"],
        ] {
            let r = try t.run(CLI.binary, args)
            #expect(r.status != 0 && r.stderr.contains("group or others can access"), "\(args): \(r.stderr)")
            try Self.expectFlagsExist(t, r.stderr, in: Array(args.prefix(args[0] == "message" ? 2 : 1)))
        }
        #expect(!t.exists("x.cs"))
        let pub = try t.cs("pubkey", "bob.pub")
        #expect(pub.status == 0 && pub.stdout == t.read("bob.pub"), "public keys may be world-readable: \(pub.stderr)")
        // An encrypted key is refused before its passphrase is asked for (no terminal here: asking would fail otherwise).
        try t.chmod("alice.key", 0o644)
        let encrypted = try t.csWithoutTerminal("pubkey", "alice.key")
        #expect(encrypted.status != 0 && encrypted.stderr.contains("group or others can access"), "\(encrypted.stderr)")
        // A public key given as -i is named as such, whatever its mode.
        let swapped = try t.cs("open", "-i", "bob.pub", "data.cs")
        #expect(swapped.status != 0 && swapped.stderr.contains("this is a public key"), "\(swapped.stderr)")
    }

    @Test func passphraseAndPasswordFilesMayBePipes() throws {
        let t = try CLI()
        let gen = try t.bash(#""$0" keygen -o me.key --passphrase-file <(echo 'pipe pass')"#)
        #expect(gen.status == 0, "\(gen.stderr)")
        let viaSubstitution = try t.bash(#""$0" pubkey --passphrase-file <(printf 'pipe pass\r\n') me.key"#)
        #expect(viaSubstitution.status == 0 && viaSubstitution.stdout == gen.stdout, "\(viaSubstitution.stderr)")
        let viaStdin = try t.cs(
            "pubkey",
            "--passphrase-file",
            "/dev/stdin",
            "me.key",
            stdin: Data("pipe pass\nsecond line\n".utf8)
        )
        #expect(viaStdin.status == 0 && viaStdin.stdout == gen.stdout, "\(viaStdin.stderr)")
        let lastLine = try t.cs("pubkey", "--passphrase-file", "/dev/stdin", "me.key", stdin: Data("pipe pass".utf8))
        #expect(lastLine.status == 0, "a first line without a line feed: \(lastLine.stderr)")
        let wrong = try t.cs("pubkey", "--passphrase-file", "/dev/stdin", "me.key", stdin: Data("pipe pasS\n".utf8))
        #expect(wrong.status != 0 && wrong.stderr.contains("wrong passphrase"), "\(wrong.stderr)")
        // Bounded: an endless first line is refused, not read into memory.
        let endless = try t.bash(#""$0" pubkey --passphrase-file <(head -c 100000 /dev/zero | tr '\0' a) me.key"#)
        #expect(endless.status != 0 && endless.stderr.contains("is over 4096 bytes"), "\(endless.stderr)")
        let empty = try t.cs("pubkey", "--passphrase-file", "/dev/stdin", "me.key", stdin: Data("\nx\n".utf8))
        #expect(empty.status != 0 && empty.stderr.contains("empty first line"), "\(empty.stderr)")
        let missing = try t.cs("pubkey", "--passphrase-file", "nope", "me.key")
        #expect(
            missing.status != 0
                && missing.stderr.contains("cannot read the passphrase file nope: No such file or directory"),
            "\(missing.stderr)"
        )
        // Only the first line is taken from a shared standard input: the rest is the file to seal.
        try t.write("bob.pub", try t.cs("keygen", "-o", "bob.key", "--no-passphrase").stdout)
        let payload = CLI.random(100_000)
        let sealed = try t.cs(
            "seal",
            "-r",
            "bob.pub",
            "-s",
            "me.key",
            "--passphrase-file",
            "/dev/stdin",
            stdin: Data("pipe pass\n".utf8) + payload
        )
        #expect(sealed.status == 0, "\(sealed.stderr)")
        try t.write("me.pub", gen.stdout)
        let verified = try t.cs("open", "-i", "bob.key", "--from", "me.pub", stdin: sealed.stdout)
        #expect(verified.status == 0 && verified.stdout == payload, "\(verified.stderr)")
        // The account commands read --password-file the same way: the password was read, the server is what failed.
        for script in [
            #""$0" account login alice --password-file <(echo 'password one') --server http://127.0.0.1:9"#,
            #""$0" account login alice --password-file /dev/stdin --server http://127.0.0.1:9 <<< 'password one'"#,
            #"echo 'password one' | "$0" account register alice --name A --lastname L --password-file /dev/stdin --server http://127.0.0.1:9"#,
        ] {
            let r = try t.bash(script)
            #expect(r.status != 0 && r.stderr.contains("cannot reach the server"), "\(script): \(r.stderr)")
            #expect(!r.stderr.contains("cannot read"), "\(script): \(r.stderr)")
        }
        let noPassword = try t.cs(
            "account",
            "login",
            "alice",
            "--password-file",
            "nope",
            "--server",
            "http://127.0.0.1:9"
        )
        #expect(noPassword.stderr.contains("cannot read the password file nope"), "\(noPassword.stderr)")
    }

    @Test func keygenForceReplacesAtomicallyAndMessagesNameRealFlags() throws {
        let t = try CLI()
        try t.write("old.pub", try t.cs("keygen", "-o", "me.key", "--no-passphrase").stdout)
        let old = t.read("me.key")
        let refused = try t.cs("keygen", "-o", "me.key", "--no-passphrase")
        #expect(
            refused.status != 0 && refused.stderr.contains("me.key already exists")
                && refused.stderr.contains("--force"),
            "\(refused.stderr)"
        )
        #expect(t.read("me.key") == old, "the existing key is untouched")
        try Self.expectFlagsExist(t, refused.stderr, in: ["keygen"])
        let before = t.listing()
        let forced = try t.cs("keygen", "-o", "me.key", "--no-passphrase", "--force")
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(t.read("me.key") != old && t.listing() == before, "replaced in place, no temporary left")
        #expect(try t.mode("me.key") == 0o600)
        #expect(
            try t.cs("pubkey", "me.key").stdout == forced.stdout,
            "the new key is the one whose public key was printed"
        )
        let noOut = try t.cs("keygen", "--no-passphrase", "--force")
        #expect(noOut.status != 0 && noOut.stderr.contains("--force replaces the -o file"), "\(noOut.stderr)")

        // Without a terminal, each command names the flag it really has.
        let login = try t.csWithoutTerminal("account", "login", "alice", "--server", "http://127.0.0.1:9")
        #expect(
            login.status != 0 && login.stderr.contains("no terminal to ask for the password; use --password-file FILE"),
            "\(login.stderr)"
        )
        try Self.expectFlagsExist(t, login.stderr, in: ["account", "login"])
        let register = try t.csWithoutTerminal(
            "account",
            "register",
            "alice",
            "--name",
            "A",
            "--lastname",
            "L",
            "--server",
            "http://127.0.0.1:9"
        )
        #expect(register.status != 0 && register.stderr.contains("use --password-file FILE"), "\(register.stderr)")
        try Self.expectFlagsExist(t, register.stderr, in: ["account", "register"])
        try t.write("pass", Data("pw\n".utf8))
        #expect(try t.cs("keygen", "-o", "enc.key", "--passphrase-file", "pass").status == 0)
        let open = try t.csWithoutTerminal("pubkey", "enc.key")
        #expect(
            open.status != 0
                && open.stderr.contains("no terminal to ask for the passphrase; use --passphrase-file FILE"),
            "\(open.stderr)"
        )
        try Self.expectFlagsExist(t, open.stderr, in: ["pubkey"])
        let keygen = try t.csWithoutTerminal("keygen", "-o", "new.key")
        #expect(
            keygen.status != 0
                && keygen.stderr.contains(
                    "no terminal to ask for the passphrase; use --passphrase-file FILE, or --no-passphrase"
                ),
            "\(keygen.stderr)"
        )
        #expect(!t.exists("new.key"))
        try Self.expectFlagsExist(t, keygen.stderr, in: ["keygen"])
    }

    /// The four cases that once read "…, but a P-256 key is needed" after a reason that said otherwise.
    @Test func wrongKeyMessagesDoNotContradictThemselves() throws {
        let t = try Self.setUp()
        let privateAsRecipient = try t.cs("seal", "-r", "bob.key", "-o", "x.cs", "data")
        #expect(privateAsRecipient.status != 0)
        #expect(
            privateAsRecipient.stderr.contains(
                "bob.key: this is a private key, but a public key is needed here; give its public key instead (`countersign pubkey KEYFILE` prints it)"
            ),
            "\(privateAsRecipient.stderr)"
        )
        let publicAsIdentity = try t.cs("open", "-i", "bob.pub", "data")
        #expect(publicAsIdentity.status != 0)
        #expect(
            publicAsIdentity.stderr.contains("bob.pub: this is a public key, but your private key is needed here"),
            "\(publicAsIdentity.stderr)"
        )
        let rsa512 = try t.cs("keygen", "--rsa-legacy", "512", "--no-passphrase", "-o", "rsa.key")
        #expect(rsa512.status != 0 && !t.exists("rsa.key"))
        #expect(
            rsa512.stderr.contains("RSA-512 is not supported: choose 1024, 2048, 3072 or 4096 bits"),
            "\(rsa512.stderr)"
        )
        #expect(try t.cs("keygen", "--rsa-legacy", "1024", "--no-passphrase", "-o", "rsa.key").status == 0)
        let p256ForPing = try t.cs(
            "message",
            "seal",
            "--format",
            "pingidentity",
            "-r",
            "bob.pub",
            "-s",
            "rsa.key",
            "hi"
        )
        #expect(p256ForPing.status != 0 && p256ForPing.stdout.isEmpty)
        #expect(
            p256ForPing.stderr.contains(
                "bob.pub: wrong key type: this is a P-256 key, but the PingIdentity format needs an RSA key"
            ),
            "\(p256ForPing.stderr)"
        )
        for r in [privateAsRecipient, publicAsIdentity, rsa512, p256ForPing] {
            #expect(!r.stderr.contains("a P-256 key is needed"), "\(r.stderr)")
        }
        // The P-256 case itself still reads as before.
        let p384 = try t.cs("seal", "-r", "\(CLI.fixtures)/p384.pub.pem", "-o", "x.cs", "data")
        #expect(
            p384.stderr.contains(
                "wrong key type: this is a P-384 key, but a P-256 key is needed; make one with `countersign keygen`"
            )
        )
    }
}
