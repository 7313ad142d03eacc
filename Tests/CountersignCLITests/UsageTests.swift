import CountersignTestSupport
import Foundation
import Testing

/// A mistyped command line (issue 19, 19): exit status 64 (EX_USAGE, sysexits(3)) and the usage of the
/// command that was run, never the root's; nothing is sent, asked or created. No server is needed: each
/// is refused before any network.
@Suite struct UsageTests {
    typealias Dir = DeviceDirectory

    /// The usage of `path`, and not the root's list of subcommands.
    static func expectUsage(
        _ r: CLI.Output,
        _ path: String,
        _ message: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(r.status == 64, "exit \(r.status): \(r.stderr)", sourceLocation: sourceLocation)
        #expect(
            r.stderr.hasPrefix("Error: ") && r.stderr.contains(message),
            "\(r.stderr)",
            sourceLocation: sourceLocation
        )
        #expect(
            r.stderr.contains("Usage: \(path.hasPrefix("countersign-server") ? "" : "countersign ")\(path)"),
            "the command's own usage: \(r.stderr)",
            sourceLocation: sourceLocation
        )
        #expect(
            !r.stderr.contains("SUBCOMMANDS") && !r.stderr.contains("Usage: countersign <subcommand>"),
            "not the root's: \(r.stderr)",
            sourceLocation: sourceLocation
        )
        #expect(r.stdout.isEmpty, sourceLocation: sourceLocation)
    }

    /// Passkey origins are checked before anything opens: each must be on the public URL's host (the RP
    /// ID) or below it, and there must be a public URL to take the RP ID from.
    @Test func webAuthnOriginsAreCheckedAgainstThePublicURL() throws {
        let t = try CLI()
        let db = "sqlite:" + t.path("never.sqlite")
        Self.expectUsage(
            try t.cs("serve", "--database", db, "--webauthn-origin", "https://app.example.com"),
            "countersign-server serve",
            "needs --public-url"
        )
        for bad in [
            "https://example.com.evil.net", "https://evilexample.com", "ftp://app.example.com",
            "https://app.example.com/path",
        ] {
            Self.expectUsage(
                try t.cs("serve", "--database", db, "--public-url", "https://example.com", "--webauthn-origin", bad),
                "countersign-server serve",
                "must be an http:// or https:// origin on example.com"
            )
        }
        #expect(!FileManager.default.fileExists(atPath: t.path("never.sqlite")))
    }

    /// The log format and level are checked before anything opens: a typo is not taken as the default.
    @Test func logFormatAndLevelAreChecked() throws {
        let t = try CLI()
        let db = "sqlite:" + t.path("never.sqlite")
        Self.expectUsage(
            try t.cs("serve", "--database", db, "--log-format", "yaml"),
            "countersign-server serve",
            "takes text or json, not yaml"
        )
        let level = try t.run("/usr/bin/env", ["COUNTERSIGN_LOG_LEVEL=verbose", CLI.binary, "serve", "--database", db])
        Self.expectUsage(level, "countersign-server serve", "COUNTERSIGN_LOG_LEVEL must be trace, debug, info")
        #expect(!FileManager.default.fileExists(atPath: t.path("never.sqlite")))
    }

    /// A trusted proxy is an address or a network; anything else is refused before anything opens.
    @Test func trustedProxiesAreAddressesOrNetworks() throws {
        let t = try CLI()
        let db = "sqlite:" + t.path("never.sqlite")
        for bad in ["10.0.0.0/33", "fd00::/129", "proxy.example", "10.0.0.0/8/8", "10.0.0.0/-1", "10.0.0.0/"] {
            Self.expectUsage(
                try t.cs("serve", "--database", db, "--trusted-proxy", bad),
                "countersign-server serve",
                "is not an address or a network"
            )
        }
        // The environment's list is checked as the flag's is.
        Self.expectUsage(
            try t.run(
                "/usr/bin/env",
                ["COUNTERSIGN_TRUSTED_PROXIES=10.0.0.1, nope", CLI.binary, "serve", "--database", db]
            ),
            "countersign-server serve",
            "\"nope\" is not an address or a network"
        )
        Self.expectUsage(
            try t.cs("serve", "--database", db, "--trusted-proxy", "10.0.0.1", "--trusted-proxy-header", "x-real-ip"),
            "countersign-server serve",
            "takes x-forwarded-for or forwarded"
        )
        #expect(!FileManager.default.fileExists(atPath: t.path("never.sqlite")))
    }

    @Test func helpForAnUnknownCommandFails() throws {
        let t = try CLI()
        let r = try t.cs("help", "nosuch")
        #expect(
            r.status == 64 && r.stderr.contains("nosuch") && r.stderr.contains("countersign help"),
            "exit \(r.status): \(r.stderr)"
        )
        let nested = try t.cs("help", "account", "nosuch")
        #expect(nested.status == 64 && nested.stderr.contains("nosuch"), "exit \(nested.status): \(nested.stderr)")
        let known = try t.cs("help", "account", "login")
        #expect(
            known.status == 0 && known.text.contains("USAGE: countersign account login"),
            "\(known.text) \(known.stderr)"
        )
    }

    /// Checks that need the environment run in `run()`; they are still usage errors of that command.
    @Test func usageErrorsFoundWhileRunningShowTheirCommand() throws {
        let t = try CLI()
        let empty = Dir(t: t, name: "empty")
        Self.expectUsage(
            try empty.cs("authenticator", "pair", "ABCD-EFGH-JKMN", "--no-passphrase"),
            "authenticator pair",
            "--server"
        )
        Self.expectUsage(
            try empty.cs("admin", "messages", "--limit", "0", "--database", "sqlite:" + t.path("none.sqlite")),
            "countersign-server admin messages",
            "--limit takes 1 to 100000"
        )
        Self.expectUsage(try empty.cs("read", "zz"), "read", "not a message ID")
        Self.expectUsage(try empty.cs("send", "--to", "bob", ""), "send", "the message is empty")
        Self.expectUsage(
            try empty.cs("send", "--to", "bob", stdin: Data()),
            "send",
            "the message is empty; nothing was sent"
        )
    }

    /// A passcode is digits; anything else was sent to the server and counted as a wrong code.
    @Test func aPasscodeThatIsNotDigitsIsRefusedBeforeSending() throws {
        let t = try CLI()
        let d = Dir(t: t, name: "d")
        try t.write("pw", Data("correct horse\n".utf8))
        // Port 9 (discard): nothing is listening there, and nothing is tried.
        for code in ["abc", "12345", "1234567890", "12 34 5a"] {
            Self.expectUsage(
                try d.cs(
                    "account",
                    "login",
                    "alice",
                    "--password-file",
                    t.path("pw"),
                    "--otp",
                    code,
                    "--server",
                    "http://127.0.0.1:9"
                ),
                "account login",
                "--otp takes the 6"
            )
        }
        Self.expectUsage(
            try d.cs("account", "passwd", "--otp", "abc", "--server", "http://127.0.0.1:9"),
            "account passwd",
            "--otp takes the 6"
        )
        Self.expectUsage(
            try d.cs("device", "init", "--otp", "abc", "--no-passphrase"),
            "device init",
            "--otp takes the 6"
        )
        for code in ["abc", "ABCDE-FGHI0", "ABCDE-FGHJK-M"] {
            Self.expectUsage(
                try d.cs(
                    "account",
                    "login",
                    "alice",
                    "--password-file",
                    t.path("pw"),
                    "--recovery-code",
                    code,
                    "--server",
                    "http://127.0.0.1:9"
                ),
                "account login",
                "--recovery-code takes one of the 10 codes"
            )
        }
    }

    /// `admin` without --database once created an empty ./countersign.sqlite and reported "no such user".
    @Test func adminWithoutADatabaseCreatesNothing() throws {
        let t = try CLI()
        let before = t.listing()
        let unlock = try t.run("/usr/bin/env", ["-u", "COUNTERSIGN_DATABASE", CLI.binary, "admin", "unlock", "alice"])
        #expect(
            unlock.status != 0 && unlock.stderr.contains("no database") && unlock.stderr.contains("--database"),
            "exit \(unlock.status): \(unlock.stderr)"
        )
        let messages = try t.cs("admin", "messages", "--database", "sqlite:" + t.path("typo.sqlite"))
        #expect(
            messages.status != 0 && messages.stderr.contains("typo.sqlite") && messages.stderr.contains("no database"),
            "\(messages.stderr)"
        )
        #expect(t.listing() == before, "nothing created: \(t.listing())")
    }
}
