import CountersignCrypto
import CountersignTestSupport
import Foundation
import Testing

/// The PingIdentity legacy payload against OpenSSL, both directions, and its refusals.
@Suite struct PingIdentityTests {
    static func key(_ t: CLI, _ name: String, bits: Int = 1024) throws -> (LegacyRSAKey, LegacyRSAPublicKey) {
        try t.run(
            "openssl",
            ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:\(bits)", "-out", "\(name).key"]
        )
        try t.write("\(name).pub", try t.run("openssl", ["pkey", "-in", "\(name).key", "-pubout"]).stdout)
        let priv = try LegacyRSAKey(pem: String(decoding: t.read("\(name).key")!, as: UTF8.self)) { [] }
        let pub = try LegacyRSAPublicKey(pem: String(decoding: t.read("\(name).pub")!, as: UTF8.self))
        return (priv, pub)
    }

    @Test func opensslOpensOursAndWeOpenOpenSSLs() throws {
        let t = try CLI()
        let (bob, bobPub) = try Self.key(t, "bob")
        let (alice, alicePub) = try Self.key(t, "alice")
        var steps: [PingIdentityPayload.Step] = []
        let payload = try PingIdentityPayload.seal("Hello from Countersign", to: bobPub, signer: alice) {
            steps.append($0)
        }
        #expect(steps == [.stringEncrypted, .stringSigned])
        #expect(payload.encryptedString.count == 128 && payload.signature.count == 128)
        try t.write("ct.bin", Data(payload.encryptedString))
        try t.write("sig.bin", Data(payload.signature))
        let dec = try t.run(
            "openssl",
            ["pkeyutl", "-decrypt", "-inkey", "bob.key", "-in", "ct.bin", "-pkeyopt", "rsa_padding_mode:pkcs1"]
        )
        #expect(dec.text == "Hello from Countersign", "\(dec.stderr)")
        let ver = try t.run("openssl", ["dgst", "-sha256", "-verify", "alice.pub", "-signature", "sig.bin", "ct.bin"])
        #expect(ver.text.contains("Verified OK"))

        // OpenSSL encrypts to Bob and signs as Alice; we verify, then decrypt.
        try t.write("msg.txt", Data("from openssl".utf8))
        try t.run(
            "openssl",
            [
                "pkeyutl", "-encrypt", "-pubin", "-inkey", "bob.pub", "-in", "msg.txt", "-out", "ct2.bin", "-pkeyopt",
                "rsa_padding_mode:pkcs1",
            ]
        )
        try t.run("openssl", ["dgst", "-sha256", "-sign", "alice.key", "-out", "sig2.bin", "ct2.bin"])
        let theirs = PingIdentityPayload(
            encryptedString: Array(t.read("ct2.bin")!),
            signature: Array(t.read("sig2.bin")!)
        )
        var opened: [PingIdentityPayload.Step] = []
        #expect(
            try PingIdentityPayload(json: theirs.json).open(with: bob, from: alicePub) { opened.append($0) }
                == "from openssl"
        )
        #expect(opened == [.signatureVerified, .stringDecrypted])
    }

    @Test func refusals() throws {
        let t = try CLI()
        let (bob, bobPub) = try Self.key(t, "bob")
        let (alice, alicePub) = try Self.key(t, "alice")
        let (_, carolPub) = try Self.key(t, "carol")
        #expect(throws: PingIdentityPayload.Failure.textTooLong(bytes: 118, limit: 117)) {
            try PingIdentityPayload.seal(String(repeating: "x", count: 118), to: bobPub, signer: alice)
        }
        #expect(
            try PingIdentityPayload.seal(String(repeating: "x", count: 117), to: bobPub, signer: alice).open(
                with: bob,
                from: alicePub
            ).count == 117
        )
        let payload = try PingIdentityPayload.seal("hi", to: bobPub, signer: alice)
        // Wrong sender, flipped ciphertext, flipped signature: "Signature Not Verified".
        #expect(throws: PingIdentityPayload.Failure.signatureNotVerified) {
            try payload.open(with: bob, from: carolPub)
        }
        for i in [0, 64, 127] {
            var bad = payload
            bad.encryptedString[i] ^= 1
            #expect(throws: PingIdentityPayload.Failure.signatureNotVerified) {
                try bad.open(with: bob, from: alicePub)
            }
            bad = payload
            bad.signature[i] ^= 1
            #expect(throws: PingIdentityPayload.Failure.signatureNotVerified) {
                try bad.open(with: bob, from: alicePub)
            }
        }
        // Sealed to Carol, opened by Bob: the signature holds, decryption fails.
        let forCarol = try PingIdentityPayload.seal("hi", to: carolPub, signer: alice)
        #expect(throws: PingIdentityPayload.Failure.decryptionFailed) { try forCarol.open(with: bob, from: alicePub) }
        for json in [
            "", "[]", "{\"encryptedString\": \"AA==\"}", "{\"encryptedString\": \"AA==\", \"signature\": \"!!\"}",
            "{\"encryptedString\": \"AA==\", \"signature\": \"AA==\", \"extra\": 1}",
            "{\"encryptedString\": 5, \"signature\": \"AA==\"}",
        ] {
            #expect(throws: PingIdentityPayload.Failure.self, "\(json)") { try PingIdentityPayload(json: json) }
        }
        #expect(throws: PingIdentityPayload.Failure.malformed("larger than 64 KiB")) {
            try PingIdentityPayload(json: String(repeating: " ", count: 70_000))
        }
        #expect(try PingIdentityPayload(json: payload.json) == payload)
    }
}
