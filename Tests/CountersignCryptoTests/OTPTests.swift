import Foundation
import Testing

@testable import CountersignCrypto

@Suite struct OTPTests {
    static func rows(_ name: String) throws -> [[String]] {
        try Fixtures.text(name).split(separator: "\n").filter { !$0.hasPrefix("#") }.map {
            $0.split(separator: "\t").map(String.init)
        }
    }

    static func seed(_ length: Int) -> [UInt8] {
        Array(String(repeating: "1234567890", count: 7).utf8.prefix(length))
    }

    /// Fuzz finding: an account starting with a combining mark fused with the label's colon into one
    /// character, so the canonical URI parsed back with the issuer folded into the account.
    @Test func anAccountStartingWithACombiningMarkRoundTrips() throws {
        let value = OTPAuthURI(
            kind: .totp,
            issuer: "Countersign",
            account: "\u{0363}rr\u{015E}ce",
            generator: try OTPGenerator(secret: Self.seed(20))
        )
        let parsed = try OTPAuthURI(parsing: value.uri)
        #expect(parsed.issuer == "Countersign")
        #expect(parsed.account == "\u{0363}rr\u{015E}ce")
        #expect(parsed.uri == value.uri)
    }

    @Test func rfc4226Vectors() throws {
        let g = try OTPGenerator(secret: Self.seed(20))
        let rows = try Self.rows("otp_rfc4226.tsv")
        #expect(rows.count == 10)
        for r in rows { #expect(g.code(counter: UInt64(r[0])!) == r[1], "counter \(r[0])") }
    }

    @Test func rfc6238Vectors() throws {
        let rows = try Self.rows("otp_rfc6238.tsv")
        #expect(rows.count == 18)
        for r in rows {
            let alg = OTPGenerator.Algorithm(rawValue: r[1])!
            let length = [OTPGenerator.Algorithm.sha1: 20, .sha256: 32, .sha512: 64][alg]!
            let g = try OTPGenerator(secret: Self.seed(length), algorithm: alg, digits: 8)
            #expect(g.code(at: Date(timeIntervalSince1970: Double(r[0])!)) == r[2], "\(r[0]) \(r[1])")
        }
    }

    @Test func windowAndReplayGuard() throws {
        let g = try OTPGenerator(secret: Self.seed(20))
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let step = g.step(at: now)
        let code = g.code(at: now)
        #expect(g.verify(code, at: now) == step)
        // The previous step's code is accepted with window 1, refused with window 0.
        let previous = g.code(counter: step - 1)
        #expect(g.verify(previous, at: now, window: 1) == step - 1)
        #expect(g.verify(previous, at: now, window: 0) == nil)
        // Two steps away is outside window 1.
        #expect(g.verify(g.code(counter: step + 2), at: now, window: 1) == nil)
        // Replay: once step was accepted, its code (and older ones) are refused.
        #expect(g.verify(code, at: now, lastAcceptedStep: step) == nil)
        #expect(g.verify(previous, at: now, lastAcceptedStep: step - 1) == nil)
        #expect(g.verify(g.code(counter: step + 1), at: now, lastAcceptedStep: step) == step + 1)
        // Wrong, short, long and non-digit codes.
        for bad in ["000000", String(code.dropLast()), code + "0", "abcdef", ""] where bad != code {
            #expect(g.verify(bad, at: now, window: 1) == nil, "\(bad)")
        }
    }

    @Test func hostileTimesAndWindowsDoNotTrap() throws {
        let g = try OTPGenerator(secret: Self.seed(20))
        for t in [Double.nan, -1, 0, 1e300, .infinity, -.infinity] {
            // Must not trap; the clamped step is 0 for non-positive and NaN times.
            _ = g.verify("000000", at: Date(timeIntervalSince1970: t), window: -5)
            if !(t > 0) { #expect(g.step(at: Date(timeIntervalSince1970: t)) == 0) }
        }
        #expect(g.verify(g.code(counter: UInt64.max), counter: UInt64.max, lookAhead: 5) == UInt64.max)
        #expect(g.verify(g.code(counter: 1), counter: 0, lookAhead: -3) == nil)  // negative look-ahead is 0
    }

    @Test func hotpLookAhead() throws {
        let g = try OTPGenerator(secret: Self.seed(20))
        #expect(g.verify("969429", counter: 0, lookAhead: 5) == 3)
        #expect(g.verify("969429", counter: 0, lookAhead: 2) == nil)
        #expect(g.verify("969429", counter: 4, lookAhead: 5) == nil)
    }

    @Test func parametersAreChecked() {
        #expect(throws: OTPError.self) { try OTPGenerator(secret: []) }
        #expect(throws: OTPError.self) { try OTPGenerator(secret: [1], digits: 5) }
        #expect(throws: OTPError.self) { try OTPGenerator(secret: [1], digits: 9) }
        #expect(throws: OTPError.self) { try OTPGenerator(secret: [1], period: 0) }
    }

    @Test func base32RoundTripAndRejects() {
        var rng = SeededRandom(seed: "b32")
        for n in 0..<40 {
            let bytes = rng.bytes(n)
            let text = Base32.encode(bytes)
            #expect(!text.contains("="))
            #expect(Base32.decode(text) == bytes)
            #expect(Base32.decode(text.lowercased()) == bytes)
        }
        #expect(Base32.encode(Array("foobar".utf8)) == "MZXW6YTBOI")  // RFC 4648 §10, unpadded
        #expect(Base32.decode("MZXW6YTBOI======") == Array("foobar".utf8))
        #expect(Base32.decode("MZXW6YTB0I") == nil)  // 0 is not in the alphabet
        #expect(Base32.decode("MZXW6YTBOJ") == nil)  // non-zero leftover bits
        #expect(Base32.decode("MZ=XW6YTBOI") == nil)  // padding only at the end
        #expect(Base32.decode("mzxw 6ytb oi==") == Array("foobar".utf8))
    }

    /// Unicode case mapping turns "ß" into "SS", "ı" into "I" and "ﬀ" into "FF": each non-ASCII form must
    /// be refused, not read as the ASCII secret it maps to.
    @Test(arguments: [
        ("JBSWY3DPEHPK3Pß", "JBSWY3DPEHPK3PSS"), ("JBSWY3DPEHPK3PXı", "JBSWY3DPEHPK3PXI"),
        ("JBSWY3DPEHPK3Pﬀ", "JBSWY3DPEHPK3PFF"), ("JBSWY3DPEHPK3PXＰ", "JBSWY3DPEHPK3PXP"),
        ("JBSWY3DPEHPK3PXP\u{0}", "JBSWY3DPEHPK3PXP"), ("JBSWY3DPEHPK3PX\tP", "JBSWY3DPEHPK3PXP"),
    ])
    func base32RefusesEverythingOutsideItsASCIIAlphabet(text: String, lookalike: String) throws {
        #expect(Base32.decode(lookalike) != nil, "the ASCII form is valid")
        #expect(Base32.decode(text) == nil, "\(text) must not decode as \(lookalike)")
        let encoded = text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
        #expect(throws: OTPError.invalidSecret("the secret is not base32 (letters A-Z and digits 2-7)")) {
            try OTPAuthURI(parsing: "otpauth://totp/x?secret=\(encoded)")
        }
    }

    /// Labels that name no account are refused with a reason, never trapped on (":" once crashed).
    @Test func labelsWithoutAnAccountAreRefused() throws {
        let refused: [(String, String)] = [
            (":", "issuer before ':' is blank"), ("%3A", "issuer before ':' is blank"),
            ("%3a", "issuer before ':' is blank"),
            ("%20%20", "missing or blank"), ("%09", "missing or blank"), ("", "missing or blank"),
            ("ACME:", "no account name after \"ACME:\""), ("ACME%3A%20", "no account name after \"ACME:\""),
            ("ACME%3A", "no account name after \"ACME:\""), (":alice", "issuer before ':' is blank"),
            ("%20:alice", "issuer before ':' is blank"),
        ]
        for (label, reason) in refused {
            let uri = "otpauth://totp/\(label)?secret=JBSWY3DPEHPK3PXP"
            #expect(throws: OTPError.self, "\(uri)") { try OTPAuthURI(parsing: uri) }
            do {
                _ = try OTPAuthURI(parsing: uri)
            } catch let e as OTPError {
                guard case .malformedURI = e, e.description.contains(reason) else {
                    Issue.record("\(uri): \(e) does not say \(reason)")
                    continue
                }
            }
        }
        // Spaces around the parts are not part of them; a colon in the account stays in the account.
        let spaced = try OTPAuthURI(parsing: "otpauth://totp/ACME%3A%20alice?secret=JBSWY3DPEHPK3PXP")
        #expect(spaced.issuer == "ACME" && spaced.account == "alice")
        let colon = try OTPAuthURI(parsing: "otpauth://totp/ACME:alice:work?secret=JBSWY3DPEHPK3PXP&issuer=ACME")
        #expect(colon.issuer == "ACME" && colon.account == "alice:work")
    }

    /// Found by the otpauth fuzz target (Fuzz/, scripts/fuzz.sh): an `issuer=` parameter with spaces around
    /// it, a colon in it, or nothing in it was accepted, and the canonical URI made from it did not parse
    /// again (the label's issuer is trimmed and ends at the first colon). Spaces are trimmed as in the label;
    /// a blank issuer or one with a colon is refused with a reason.
    @Test func issuerParameterParsesAgainFromTheCanonicalURI() throws {
        let secret = "secret=JBSWY3DPEHPK3PXP"
        for (uri, issuer) in [
            ("otpauth://totp/alice?\(secret)&issuer=%20ACME%20", "ACME"),
            ("otpauth://totp/ACME:alice?\(secret)&issuer=ACME%09", "ACME"),
            ("otpauth://totp/alice?\(secret)&issuer=ACME%20Co", "ACME Co"),
        ] {
            let parsed = try OTPAuthURI(parsing: uri)
            #expect(parsed.issuer == issuer && parsed.account == "alice", "\(uri)")
            #expect(try OTPAuthURI(parsing: parsed.uri) == parsed, "\(uri) -> \(parsed.uri)")
        }
        for (uri, reason) in [
            ("otpauth://totp/alice?\(secret)&issuer=", "issuer parameter is blank"),
            ("otpauth://totp/alice?\(secret)&issuer", "issuer parameter is blank"),
            ("otpauth://totp/alice?\(secret)&issuer=%20", "issuer parameter is blank"),
            ("otpauth://totp/alice?\(secret)&issuer=A:B", "issuer parameter holds a colon"),
            ("otpauth://totp/alice?\(secret)&issuer=A%3AB", "issuer parameter holds a colon"),
            ("otpauth://totp/A:alice?\(secret)&issuer=A:B", "issuer parameter holds a colon"),
        ] {
            do {
                let parsed = try OTPAuthURI(parsing: uri)
                Issue.record("accepted \(uri) as issuer \(parsed.issuer.debugDescription), canonical \(parsed.uri)")
            } catch let e as OTPError {
                #expect(e.description.contains(reason), "\(uri): \(e)")
            }
        }
    }

    /// Found by the otpauth fuzz target: an hotp URI with a period parameter kept that period in its
    /// generator, but the canonical hotp URI writes no period, so it parsed again to another value. HOTP has
    /// no period; the parameter is ignored on hotp URIs, as authenticator apps do.
    @Test func hotpURIIgnoresThePeriod() throws {
        for period in ["60", "301", "abc"] {
            let uri = "otpauth://hotp/bob?secret=JBSWY3DPEHPK3PXP&counter=0&period=\(period)"
            let parsed = try OTPAuthURI(parsing: uri)
            #expect(parsed.generator.period == 30 && parsed.kind == .hotp(counter: 0), "\(uri)")
            #expect(try OTPAuthURI(parsing: parsed.uri) == parsed, "\(uri) -> \(parsed.uri)")
        }
        let totp = try OTPAuthURI(parsing: "otpauth://totp/bob?secret=JBSWY3DPEHPK3PXP&period=60")
        #expect(totp.generator.period == 60)
        #expect(try OTPAuthURI(parsing: totp.uri) == totp)
    }

    @Test func uriRoundTripAndReasons() throws {
        let uri =
            "otpauth://totp/ACME%20Co:alice@example.com?secret=JBSWY3DPEHPK3PXP&issuer=ACME%20Co&algorithm=SHA256&digits=8&period=60"
        let parsed = try OTPAuthURI(parsing: uri)
        #expect(parsed.issuer == "ACME Co" && parsed.account == "alice@example.com")
        #expect(parsed.generator.algorithm == .sha256 && parsed.generator.digits == 8 && parsed.generator.period == 60)
        #expect(parsed.generator.secret == Base32.decode("JBSWY3DPEHPK3PXP"))
        #expect(try OTPAuthURI(parsing: parsed.uri) == parsed)
        let hotp = try OTPAuthURI(parsing: "otpauth://hotp/bob?secret=JBSWY3DPEHPK3PXP&counter=7")
        #expect(hotp.kind == .hotp(counter: 7) && hotp.generator.digits == 6 && hotp.generator.algorithm == .sha1)
        #expect(try OTPAuthURI(parsing: hotp.uri) == hotp)
        let bad: [(String, String)] = [
            ("https://totp/x?secret=JBSWY3DP", "scheme"),
            ("otpauth://motp/x?secret=JBSWY3DP", "type"),
            ("otpauth://totp/?secret=JBSWY3DP", "label"),
            ("otpauth://totp/x", "secret"),
            ("otpauth://totp/x?secret=JBSW1", "base32"),
            ("otpauth://totp/x?secret=JBSWY3DP&algorithm=MD5", "MD5"),
            ("otpauth://totp/x?secret=JBSWY3DP&digits=10", "digits"),
            ("otpauth://totp/x?secret=JBSWY3DP&period=abc", "period"),
            ("otpauth://hotp/x?secret=JBSWY3DP", "counter"),
            ("otpauth://totp/A:x?secret=JBSWY3DP&issuer=B", "differs"),
            ("otpauth://totp/x?secret=JBSWY3DP&secret=JBSWY3DP", "twice"),
        ]
        for (text, reason) in bad {
            do {
                _ = try OTPAuthURI(parsing: text)
                Issue.record("accepted \(text)")
            } catch let e as OTPError {
                #expect(e.description.contains(reason), "\(text): \(e)")
            }
        }
    }
}
