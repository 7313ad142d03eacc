import CountersignCrypto
import CountersignTestSupport
import Foundation
import Testing

/// `countersign otp` prints what oathtool (an implementation nobody here wrote) prints.
@Suite struct OTPCommandTests {
    @Test func matchesOathtool() throws {
        let t = try CLI()
        var g = SystemRandomNumberGenerator()
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        for (alg, digits, period) in [("SHA1", 6, 30), ("SHA256", 8, 30), ("SHA512", 7, 60), ("SHA1", 8, 15)] {
            for _ in 0..<3 {
                let secret = String((0..<32).map { _ in alphabet[Int.random(in: 0..<32, using: &g)] })
                let time = Int.random(in: 0...4_000_000_000, using: &g)
                let ours = try t.cs(
                    "otp",
                    "--secret",
                    secret,
                    "--algorithm",
                    alg,
                    "--digits",
                    "\(digits)",
                    "--period",
                    "\(period)",
                    "--time",
                    "\(time)"
                )
                #expect(ours.status == 0, "\(ours.stderr)")
                let theirs = try t.run(
                    "oathtool",
                    [
                        "--totp=\(alg.lowercased())", "-d", "\(digits)", "-s", "\(period)s", "-b", secret, "--now",
                        "@\(time)",
                    ]
                )
                #expect(theirs.status == 0, "\(theirs.stderr)")
                #expect(ours.text == theirs.text, "\(alg) \(digits) \(period) \(time)")
                // The same through an otpauth:// URI.
                let uri = "otpauth://totp/t?secret=\(secret)&algorithm=\(alg)&digits=\(digits)&period=\(period)"
                #expect(try t.cs("otp", uri, "--time", "\(time)").text == theirs.text)
            }
        }
        for counter in [0, 1, 99, 123_456] {
            let ours = try t.cs("otp", "--secret", "JBSWY3DPEHPK3PXP", "--counter", "\(counter)")
            let theirs = try t.run("oathtool", ["-b", "-c", "\(counter)", "JBSWY3DPEHPK3PXP"])
            #expect(ours.text == theirs.text && ours.status == 0, "counter \(counter)")
        }
    }

    @Test func badInputSaysWhy() throws {
        let t = try CLI()
        let notBase32 = try t.cs("otp", "--secret", "0189")
        #expect(notBase32.status != 0 && notBase32.stderr.contains("base32"))
        let badURI = try t.cs("otp", "otpauth://totp/x?secret=JBSWY3DP&digits=12")
        #expect(badURI.status != 0 && badURI.stderr.contains("digits"))
        let both = try t.cs("otp", "--secret", "JBSWY3DP", "otpauth://totp/x?secret=JBSWY3DP")
        #expect(both.status != 0)
        let badTime = try t.cs("otp", "--secret", "JBSWY3DP", "--time", "yesterday")
        #expect(badTime.status != 0 && badTime.stderr.contains("ISO 8601"))
    }

    /// ":" and "%3A" once trapped (exit 132); blank labels and "Issuer:" alone were accepted.
    @Test func labelsWithoutAnAccountAreRefusedWithoutATrap() throws {
        let t = try CLI()
        let cases: [(String, String)] = [
            (":", "the label's issuer before ':' is blank"), ("%3A", "the label's issuer before ':' is blank"),
            ("%20%20", "the label (account name) is missing or blank"),
            ("ACME:", "the label has no account name after \"ACME:\""),
            ("ACME%3A%20", "the label has no account name after \"ACME:\""),
        ]
        for (label, reason) in cases {
            let r = try t.cs("otp", "otpauth://totp/\(label)?secret=JBSWY3DPEHPK3PXP")
            #expect(r.status == 1, "\(label): exit \(r.status) (a trap is 4/5, seen by a shell as 132/133)")
            #expect(r.stdout.isEmpty && r.stderr.contains("malformed otpauth URI: \(reason)"), "\(label): \(r.stderr)")
        }
        let good = try t.cs("otp", "otpauth://totp/ACME:alice?secret=JBSWY3DPEHPK3PXP", "--time", "59")
        #expect(good.status == 0 && good.text == "996554\n", "\(good.stderr)")
    }

    /// "ß" upper-cases to "SS": the secret …3Pß once gave the code of …3PSS.
    @Test func secretsOutsideTheASCIIAlphabetAreRefused() throws {
        let t = try CLI()
        #expect(try t.cs("otp", "--secret", "JBSWY3DPEHPK3PSS", "--time", "59").status == 0)
        for secret in ["JBSWY3DPEHPK3Pß", "JBSWY3DPEHPK3PXı", "JBSWY3DPEHPK3Pﬀ"] {
            let r = try t.cs("otp", "--secret", secret, "--time", "59")
            #expect(r.status != 0 && r.stdout.isEmpty && r.stderr.contains("not base32"), "\(secret): \(r.stderr)")
            let encoded = secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let uri = try t.cs("otp", "otpauth://totp/x?secret=\(encoded)", "--time", "59")
            #expect(
                uri.status != 0 && uri.stdout.isEmpty && uri.stderr.contains("not base32"),
                "\(secret): \(uri.stderr)"
            )
        }
    }

    /// "-1" was read as an unknown flag ("Missing value for '--counter <counter>'").
    @Test func negativeAndNonNumericCountersAreRefusedClearly() throws {
        let t = try CLI()
        for value in ["-1", "-18446744073709551616"] {
            let r = try t.cs("otp", "--secret", "JBSWY3DPEHPK3PXP", "--counter", value)
            #expect(r.status != 0 && r.stdout.isEmpty, "\(value)")
            #expect(
                r.stderr.contains(
                    "--counter cannot be negative (\(value)); HOTP counters run from 0 to 18446744073709551615"
                ),
                "\(r.stderr)"
            )
        }
        for value in ["abc", "18446744073709551616", "1.5", "-"] {
            let r = try t.cs("otp", "--secret", "JBSWY3DPEHPK3PXP", "--counter", value)
            #expect(
                r.status != 0
                    && r.stderr.contains(
                        "--counter must be a whole number from 0 to 18446744073709551615, not \(value)"
                    ),
                "\(value): \(r.stderr)"
            )
        }
        let max = try t.cs("otp", "--secret", "JBSWY3DPEHPK3PXP", "--counter", "18446744073709551615")
        let theirs = try t.run("oathtool", ["-b", "-c", "18446744073709551615", "JBSWY3DPEHPK3PXP"])
        #expect(max.status == 0 && theirs.status == 0 && max.text == theirs.text, "\(max.stderr) \(theirs.stderr)")
    }
}

/// PHC strings from the reference `argon2` command verify with ours, and the reverse.
@Suite struct Argon2InteropTests {
    @Test func referenceCLIAndOursAgree() throws {
        let t = try CLI()
        let out = try t.run(
            "argon2",
            ["somesaltsomesalt", "-id", "-t", "2", "-k", "19456", "-p", "1", "-e"],
            stdin: Data("hunter22".utf8)
        )
        #expect(out.status == 0, "\(out.stderr)")
        let phc = out.text.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(phc.hasPrefix("$argon2id$v=19$m=19456,t=2,p=1$"))
        #expect(try PasswordHasher.verify(Array("hunter22".utf8), against: phc))
        #expect(try !PasswordHasher.verify(Array("hunter23".utf8), against: phc))
        #expect(!PasswordHasher.owasp.needsRehash(phc))
    }
}
