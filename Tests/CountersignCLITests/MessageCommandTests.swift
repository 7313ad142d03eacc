import CountersignCrypto
import CountersignTestSupport
import Foundation
import Testing

/// `countersign message seal|open`, both formats, as a user runs them.
@Suite struct MessageCommandTests {
    static func setUp() throws -> CLI {
        let t = try CLI()
        try t.write("pass", Data("alice pass\n".utf8))
        try t.write("alice.pub", try t.cs("keygen", "-o", "alice.key", "--passphrase-file", "pass").stdout)
        try t.write("bob.pub", try t.cs("keygen", "-o", "bob.key", "--no-passphrase").stdout)
        try t.write("carol.pub", try t.cs("keygen", "-o", "carol.key", "--no-passphrase").stdout)
        return t
    }

    static func lines(_ s: String) -> [String] { s.split(separator: "\n").map(String.init) }

    @Test func sealAndOpenReportTheAppsSteps() throws {
        let t = try Self.setUp()
        let sealed = try t.cs(
            "message",
            "seal",
            "-r",
            "bob.pub",
            "-r",
            "carol.pub",
            "-s",
            "alice.key",
            "--passphrase-file",
            "pass",
            "--verbose",
            "see you at noon ✓"
        )
        #expect(sealed.status == 0, "\(sealed.stderr)")
        #expect(sealed.text.hasPrefix("-----BEGIN COUNTERSIGN MESSAGE-----\n"))
        #expect(
            Self.lines(sealed.stderr) == ["Keypair created", "String encrypted", "String signed"]
        )
        for reader in ["bob.key", "carol.key"] {
            let opened = try t.cs(
                "message",
                "open",
                "-i",
                reader,
                "--from",
                "alice.pub",
                "--verbose",
                stdin: sealed.stdout
            )
            #expect(opened.status == 0, "\(opened.stderr)")
            #expect(opened.text == "see you at noon ✓")
            let steps = Self.lines(opened.stderr)
            #expect(Array(steps.prefix(2)) == ["Signature verified", "String decrypted"])
            let aliceFP = try t.cs("pubkey", "alice.pub").stderr.components(separatedBy: "fingerprint: ")[1]
                .trimmingCharacters(in: .newlines)
            #expect(steps.contains("from: \(aliceFP)"))
            #expect(steps.contains { $0.hasPrefix("message ID: ") && $0.count == "message ID: ".count + 32 })
            #expect(!opened.stderr.contains("warning"))
        }
        // Whitespace around the envelope, as pasted: a leading blank line, CRLF, trailing spaces.
        for wrapped in ["\n" + sealed.text, "\r\n\n" + sealed.text + "  \n\n", "\t" + sealed.text] {
            let r = try t.cs("message", "open", "-i", "bob.key", "--from", "alice.pub", stdin: Data(wrapped.utf8))
            #expect(r.status == 0 && r.text == "see you at noon ✓", "\(r.stderr)")
        }
        // Without --verbose, nothing on stderr; the envelope can also be given as the argument.
        let quiet = try t.cs("message", "open", "-i", "bob.key", "--from", "alice.pub", "--", sealed.text)
        #expect(quiet.status == 0 && quiet.stderr.isEmpty && quiet.text == "see you at noon ✓")
    }

    @Test func refusals() throws {
        let t = try Self.setUp()
        let sealed = try t.cs(
            "message",
            "seal",
            "-r",
            "bob.pub",
            "-s",
            "alice.key",
            "--passphrase-file",
            "pass",
            stdin: Data("for bob\n".utf8)
        )
        #expect(sealed.status == 0, "\(sealed.stderr)")
        let carol = try t.cs(
            "message",
            "open",
            "-i",
            "carol.key",
            "--from",
            "alice.pub",
            "--verbose",
            stdin: sealed.stdout
        )
        #expect(carol.status == 1 && carol.stdout.isEmpty)
        #expect(carol.stderr.contains("not for this key"), "\(carol.stderr)")
        #expect(carol.stderr.contains("Signature verified") && !carol.stderr.contains("String decrypted"))
        let wrongSender = try t.cs("message", "open", "-i", "bob.key", "--from", "carol.pub", stdin: sealed.stdout)
        #expect(
            wrongSender.status == 1 && wrongSender.stdout.isEmpty
                && wrongSender.stderr.contains("Signature Not Verified")
        )
        // One base64 character changed in the middle of the second armor line (inside the header).
        var lines = sealed.text.split(separator: "\n").map { Array($0) }
        lines[2][30] = lines[2][30] == "A" ? "B" : "A"
        let tamperedText = lines.map { String($0) }.joined(separator: "\n") + "\n"
        let tampered = try t.cs(
            "message",
            "open",
            "-i",
            "bob.key",
            "--from",
            "alice.pub",
            stdin: Data(tamperedText.utf8)
        )
        #expect(tampered.status == 1 && tampered.stdout.isEmpty, "\(tampered.stderr)")
        #expect(
            tampered.stderr.contains("Signature Not Verified") || tampered.stderr.contains("malformed"),
            "\(tampered.stderr)"
        )
        let cut = try t.cs(
            "message",
            "open",
            "-i",
            "bob.key",
            "--from",
            "alice.pub",
            stdin: Data(sealed.text.prefix(200).utf8)
        )
        #expect(cut.status == 1 && cut.stderr.contains("malformed"), "\(cut.stderr)")
        try t.write("msg.txt", sealed.stdout)
        let fileArg = try t.cs("message", "open", "-i", "bob.key", "--from", "alice.pub", "msg.txt")
        #expect(fileArg.status != 0 && fileArg.stderr.contains("< msg.txt"), "\(fileArg.stderr)")
        let big = try t.cs(
            "message",
            "seal",
            "-r",
            "bob.pub",
            "-s",
            "bob.key",
            stdin: Data(repeating: 0x61, count: (1 << 20) + 1)
        )
        #expect(big.status != 0 && big.stderr.contains("1 MiB") && big.stdout.isEmpty)
        let binary = try t.cs("message", "seal", "-r", "bob.pub", "-s", "bob.key", stdin: Data([0xff, 0xfe, 0x00]))
        #expect(binary.status != 0 && binary.stderr.contains("not UTF-8"))
        let none = try t.cs("message", "seal", "-s", "bob.key", "hi")
        #expect(none.status != 0 && none.stderr.contains("-r PUBKEY"))
        let garbage = try t.cs("message", "open", "-i", "bob.key", "--from", "alice.pub", stdin: Data("hello".utf8))
        #expect(garbage.status != 0 && garbage.stderr.contains("not a message envelope"))
    }

    /// Python's `cryptography` (an ECDSA we did not write) verifies the envelope's signature over the
    /// signed message SPEC §8.2 defines, and sees a low S.
    @Test func pythonCryptographyVerifiesTheSignature() throws {
        let t = try Self.setUp()
        let sealed = try t.cs(
            "message",
            "seal",
            "-r",
            "bob.pub",
            "-s",
            "alice.key",
            "--passphrase-file",
            "pass",
            "checked elsewhere"
        )
        let envelope = try MessageEnvelope(armored: sealed.text)
        try t.write("signed.bin", Data(envelope.signedMessage))
        try t.write("sig.bin", Data(envelope.bytes.suffix(64)))
        let script = """
            import sys
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import ec, utils
            pub = serialization.load_pem_public_key(open('alice.pub','rb').read())
            sig = open('sig.bin','rb').read()
            r, s = int.from_bytes(sig[:32], 'big'), int.from_bytes(sig[32:], 'big')
            q = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
            assert s <= (q - 1) // 2, 'high S'
            msg = open('signed.bin','rb').read()
            assert msg.startswith(b'countersign/v1 message signature\\x00') and len(msg) == 33 + 32
            pub.verify(utils.encode_dss_signature(r, s), msg, ec.ECDSA(hashes.SHA256()))
            print('verified')
            """
        let py = try t.run("python3", ["-c", script])
        #expect(py.text == "verified\n", "\(py.stderr)")
    }

    @Test func pingIdentityFormatThroughTheCLIAgainstOpenSSL() throws {
        let t = try CLI()
        try t.write("bob.pub", try t.cs("keygen", "--rsa-legacy", "1024", "-o", "bob.key", "--no-passphrase").stdout)
        try t.write(
            "alice.pub",
            try t.cs("keygen", "--rsa-legacy", "1024", "-o", "alice.key", "--no-passphrase").stdout
        )
        let sealed = try t.cs(
            "message",
            "seal",
            "--format",
            "pingidentity",
            "-r",
            "bob.pub",
            "-s",
            "alice.key",
            "--verbose",
            "Hello from the CLI"
        )
        #expect(sealed.status == 0, "\(sealed.stderr)")
        #expect(sealed.stderr.contains("warning: the PingIdentity format is weak"))
        #expect(Self.lines(sealed.stderr).filter { !$0.hasPrefix("warning") } == ["String encrypted", "String signed"])
        let json = try #require(try JSONSerialization.jsonObject(with: sealed.stdout) as? [String: String])
        #expect(Set(json.keys) == ["encryptedString", "signature"])
        try t.write("ct.bin", try #require(Data(base64Encoded: json["encryptedString"]!)))
        try t.write("sig.bin", try #require(Data(base64Encoded: json["signature"]!)))
        let dec = try t.run(
            "openssl",
            ["pkeyutl", "-decrypt", "-inkey", "bob.key", "-in", "ct.bin", "-pkeyopt", "rsa_padding_mode:pkcs1"]
        )
        #expect(dec.text == "Hello from the CLI", "\(dec.stderr)")
        #expect(
            try t.run("openssl", ["dgst", "-sha256", "-verify", "alice.pub", "-signature", "sig.bin", "ct.bin"]).text
                .contains("Verified OK")
        )

        let opened = try t.cs(
            "message",
            "open",
            "-i",
            "bob.key",
            "--from",
            "alice.pub",
            "--verbose",
            stdin: sealed.stdout
        )
        #expect(opened.status == 0 && opened.text == "Hello from the CLI", "\(opened.stderr)")
        #expect(
            Self.lines(opened.stderr).filter { !$0.hasPrefix("warning") } == ["Signature verified", "String decrypted"]
        )
        #expect(opened.stderr.contains("warning: the PingIdentity format is weak"))

        // OpenSSL writes the payload; our CLI opens it.
        try t.write("m.txt", Data("from openssl".utf8))
        try t.run(
            "openssl",
            [
                "pkeyutl", "-encrypt", "-pubin", "-inkey", "bob.pub", "-in", "m.txt", "-out", "c2.bin", "-pkeyopt",
                "rsa_padding_mode:pkcs1",
            ]
        )
        try t.run("openssl", ["dgst", "-sha256", "-sign", "alice.key", "-out", "s2.bin", "c2.bin"])
        let theirs =
            "{\"encryptedString\": \"\(t.read("c2.bin")!.base64EncodedString())\", \"signature\": \"\(t.read("s2.bin")!.base64EncodedString())\"}"
        let fromOpenSSL = try t.cs("message", "open", "-i", "bob.key", "--from", "alice.pub", theirs)
        #expect(fromOpenSSL.status == 0 && fromOpenSSL.text == "from openssl", "\(fromOpenSSL.stderr)")

        // Refusals: wrong sender, tampered ciphertext, over the RSA-1024 limit, several recipients, a P-256 key.
        let wrong = try t.cs("message", "open", "-i", "bob.key", "--from", "bob.pub", stdin: sealed.stdout)
        #expect(wrong.status == 1 && wrong.stdout.isEmpty && wrong.stderr.contains("Signature Not Verified"))
        var ct = Data(base64Encoded: json["encryptedString"]!)!
        ct[5] ^= 1
        let tampered =
            "{\"encryptedString\": \"\(ct.base64EncodedString())\", \"signature\": \"\(json["signature"]!)\"}"
        let bad = try t.cs("message", "open", "-i", "bob.key", "--from", "alice.pub", "--verbose", tampered)
        #expect(
            bad.status == 1 && bad.stderr.contains("Signature Not Verified") && !bad.stderr.contains("String decrypted")
        )
        let long = try t.cs(
            "message",
            "seal",
            "--format",
            "pingidentity",
            "-r",
            "bob.pub",
            "-s",
            "alice.key",
            String(repeating: "x", count: 118)
        )
        #expect(long.status == 1 && long.stdout.isEmpty)
        #expect(long.stderr.contains("at most 117") && long.stderr.contains("default message format"), "\(long.stderr)")
        #expect(
            try t.cs(
                "message",
                "seal",
                "--format",
                "pingidentity",
                "-r",
                "bob.pub",
                "-s",
                "alice.key",
                String(repeating: "x", count: 117)
            ).status == 0
        )
        let two = try t.cs(
            "message",
            "seal",
            "--format",
            "pingidentity",
            "-r",
            "bob.pub",
            "-r",
            "alice.pub",
            "-s",
            "alice.key",
            "hi"
        )
        #expect(two.status != 0 && two.stderr.contains("exactly one recipient"))
        try t.write("p256.pub", try t.cs("keygen", "-o", "p256.key", "--no-passphrase").stdout)
        let mixed = try t.cs("message", "seal", "--format", "pingidentity", "-r", "p256.pub", "-s", "alice.key", "hi")
        #expect(mixed.status != 0 && mixed.stderr.contains("RSA"), "\(mixed.stderr)")
        let forced = try t.cs(
            "message",
            "open",
            "--format",
            "countersign",
            "-i",
            "bob.key",
            "--from",
            "alice.pub",
            stdin: sealed.stdout
        )
        #expect(forced.status != 0 && forced.stderr.contains("pingidentity envelope"))
    }
}
