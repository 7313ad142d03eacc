import CountersignTestSupport
import Foundation
import Testing

/// Tools nobody here wrote read what we write, and we read what they write.
@Suite struct InteropTests {
    @Test func opensslReadsOurKeysAndFingerprintMatches() throws {
        let t = try CLI()
        try t.write("pass", Data("s3cret passphrase\n".utf8))
        let gen = try t.cs("keygen", "-o", "me.key", "--passphrase-file", "pass")
        #expect(gen.status == 0, "\(gen.stderr)")
        try t.write("me.pub", gen.stdout)
        #expect(String(decoding: t.read("me.key")!, as: UTF8.self).hasPrefix("-----BEGIN ENCRYPTED PRIVATE KEY-----"))
        let mode = try FileManager.default.attributesOfItem(atPath: t.path("me.key"))[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // OpenSSL decrypts the PKCS#8 with the passphrase and derives the same public key.
        let derived = try t.run("openssl", ["pkey", "-in", "me.key", "-passin", "file:pass", "-pubout"])
        #expect(derived.status == 0, "\(derived.stderr)")
        #expect(derived.stdout == gen.stdout)
        let wrong = try t.run("openssl", ["pkey", "-in", "me.key", "-passin", "pass:nope", "-noout"])
        #expect(wrong.status != 0)
        // OpenSSL reads the SPKI; the fingerprint is SHA-256 of its DER, first 16 bytes.
        let der = try t.run("openssl", ["pkey", "-pubin", "-in", "me.pub", "-outform", "DER"])
        #expect(der.status == 0)
        try t.write("me.der", der.stdout)
        let sum = try t.run("sha256sum", ["me.der"]).text.prefix(32)
        let fp = gen.stderr.components(separatedBy: "fingerprint: ").last!.trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        #expect(fp.replacingOccurrences(of: ":", with: "") == sum)
    }

    @Test func opensslMadeKeysWorkAsIdentityAndRecipient() throws {
        let t = try CLI()
        try t.run("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "o.key"])
        try t.run(
            "openssl",
            ["pkcs8", "-topk8", "-in", "o.key", "-v2", "aes-256-cbc", "-passout", "pass:pw", "-out", "o.enc.key"]
        )
        try t.write("pw", Data("pw\n".utf8))
        try t.write("o.pub", try t.run("openssl", ["pkey", "-in", "o.key", "-pubout"]).stdout)
        try t.write("msg", Data("from openssl keys".utf8))
        #expect(
            try t.cs("seal", "-r", "o.pub", "-s", "o.enc.key", "--passphrase-file", "pw", "-o", "msg.cs", "msg").status
                == 0
        )
        let opened = try t.cs("open", "-i", "o.key", "--from", "o.pub", "msg.cs")
        #expect(opened.status == 0, "\(opened.stderr)")
        #expect(opened.text == "from openssl keys")
    }

    @Test func filelockPackagesCrossWithPythonCryptography() throws {
        let t = try CLI()
        try t.cs("keygen", "-o", "me.key", "--no-passphrase")
        let fl = try t.cs("pubkey", "--format", "filelock", "me.key")
        try t.write("me.filelock.pem", fl.stdout)
        #expect(fl.stdout.count == 26 + 2 + 64 + 2 + 24 + 2 + 24 + 2)  // armor, 64 + 24 base64, CRLF
        let data = CLI.random(200_000)
        try t.write("photo.jpg", data)

        // Python seals to our FileLock-form public key; we open.
        let py = try t.run("python3", ["\(CLI.interop)/filelock.py", "seal", "me.filelock.pem", "photo.jpg", "py.pkg"])
        #expect(py.status == 0, "\(py.stderr)")
        let opened = try t.cs("open", "-i", "me.key", "-o", "out.jpg", "py.pkg")
        #expect(opened.status == 0, "\(opened.stderr)")
        #expect(t.read("out.jpg") == data)

        // We seal; Python opens.
        #expect(
            try t.cs("seal", "--format", "filelock", "-r", "me.filelock.pem", "-o", "us.pkg", "photo.jpg").status == 0
        )
        #expect(t.read("us.pkg")!.count == data.count + 157)
        let pyOpen = try t.run("python3", ["\(CLI.interop)/filelock.py", "open", "me.key", "us.pkg", "py.out"])
        #expect(pyOpen.status == 0, "\(pyOpen.stderr)")
        #expect(t.read("py.out") == data)

        // The construction also opens a ciphertext made by Apple's Security.framework (SHA-224 sibling).
        let apple = try t.run("python3", ["\(CLI.interop)/filelock.py", "apple-vector"])
        #expect(apple.status == 0, "\(apple.stderr)")
    }

    @Test func rsaLegacyKeysAreReadByOpenSSL() throws {
        let t = try CLI()
        let gen = try t.cs("keygen", "--rsa-legacy", "1024", "--no-passphrase", "-o", "rsa.key")
        #expect(gen.status == 0, "\(gen.stderr)")
        #expect(gen.stderr.contains("weak"))
        let text = try t.run("openssl", ["pkey", "-in", "rsa.key", "-noout", "-text"])
        #expect(text.text.contains("1024 bit"))
        #expect(try t.cs("keygen", "--rsa-legacy", "512", "--no-passphrase", "-o", "x.key").status != 0)
    }
}
