import CountersignTestSupport
import Crypto
import Foundation
import Testing

@testable import CountersignCrypto

/// RFC 8291 message encryption (`aes128gcm`, one record): the RFC's Appendix A vector reproduced byte for byte
/// from its fixed key and salt and opened again, padding that hides the length, and the bodies that must not
/// open: altered, truncated, another subscription's, a bad key, too long.
@Suite struct WebPushMessageTests {
    struct Vector: Decodable {
        let plaintext, ua_private, ua_public, auth_secret, as_private, as_public, salt, body: String
    }

    static func b64u(_ text: String) -> [UInt8] {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Array(Data(base64Encoded: s)!)
    }

    let vector: Vector = try! JSONDecoder().decode(
        Vector.self,
        from: Data(contentsOf: Fixtures.root.appendingPathComponent("web_push_rfc8291.json"))
    )

    var receiver: P256.KeyAgreement.PrivateKey {
        try! P256.KeyAgreement.PrivateKey(rawRepresentation: Self.b64u(vector.ua_private))
    }

    @Test func theRFCVectorIsReproducedAndOpened() throws {
        let plaintext = Self.b64u(vector.plaintext)
        let sender = try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.b64u(vector.as_private))
        #expect(Array(sender.publicKey.x963Representation) == Self.b64u(vector.as_public))
        #expect(Array(receiver.publicKey.x963Representation) == Self.b64u(vector.ua_public))
        let body = try WebPushMessage.seal(
            plaintext,
            p256dh: Self.b64u(vector.ua_public),
            auth: Self.b64u(vector.auth_secret),
            paddedSize: plaintext.count,
            ephemeral: sender,
            salt: Self.b64u(vector.salt)
        )
        #expect(body == Self.b64u(vector.body))
        #expect(
            try WebPushMessage.open(Self.b64u(vector.body), privateKey: receiver, auth: Self.b64u(vector.auth_secret))
                == plaintext
        )
    }

    @Test func paddingMakesEveryBodyTheSameLength() throws {
        let auth = Self.b64u(vector.auth_secret)
        let key = Self.b64u(vector.ua_public)
        let short = try WebPushMessage.seal(Array("m".utf8), p256dh: key, auth: auth, paddedSize: 256)
        let long = try WebPushMessage.seal(Array(repeating: 0x41, count: 256), p256dh: key, auth: auth, paddedSize: 256)
        #expect(short.count == long.count && short.count == 16 + 4 + 1 + 65 + 256 + 1 + 16)
        #expect(try WebPushMessage.open(short, privateKey: receiver, auth: auth) == Array("m".utf8))
        // A plaintext that ends in zero bytes keeps them: only the padding after the delimiter goes.
        let zeros: [UInt8] = [0x61, 0, 0]
        let body = try WebPushMessage.seal(zeros, p256dh: key, auth: auth, paddedSize: 64)
        #expect(try WebPushMessage.open(body, privateKey: receiver, auth: auth) == zeros)
        // Fresh key and salt each time: the same message twice is two different bodies.
        #expect(try WebPushMessage.seal(zeros, p256dh: key, auth: auth, paddedSize: 64) != body)
    }

    @Test func whatMustNotOpenDoesNot() throws {
        let auth = Self.b64u(vector.auth_secret)
        let body = Self.b64u(vector.body)
        var altered = body
        altered[body.count - 20] ^= 0x01
        #expect(throws: WebPushMessage.Failure.notForThisSubscription) {
            try WebPushMessage.open(altered, privateKey: receiver, auth: auth)
        }
        var otherAuth = auth
        otherAuth[0] ^= 0x01
        #expect(throws: WebPushMessage.Failure.notForThisSubscription) {
            try WebPushMessage.open(body, privateKey: receiver, auth: otherAuth)
        }
        #expect(throws: WebPushMessage.Failure.notForThisSubscription) {
            try WebPushMessage.open(body, privateKey: P256.KeyAgreement.PrivateKey(), auth: auth)
        }
        for cut in [0, 20, 21 + 65, body.count - 1] {
            #expect(throws: WebPushMessage.Failure.self, "cut at \(cut)") {
                try WebPushMessage.open(Array(body.prefix(cut)), privateKey: receiver, auth: auth)
            }
        }
        // The sender's key not on the curve.
        var offCurve = body
        offCurve[21 + 64] ^= 0x01
        #expect(throws: WebPushMessage.Failure.self) {
            try WebPushMessage.open(offCurve, privateKey: receiver, auth: auth)
        }
        // Bad subscription keys and sizes are refused before anything is sealed.
        let key = Self.b64u(vector.ua_public)
        var notOnCurve = key
        notOnCurve[64] ^= 0x01
        for bad in [Array(key.prefix(64)), [0x02] + Array(key.dropFirst().prefix(32)), notOnCurve] {
            #expect(throws: WebPushMessage.Failure.invalidSubscriptionKey) {
                try WebPushMessage.seal([1], p256dh: bad, auth: auth, paddedSize: 16)
            }
        }
        #expect(throws: WebPushMessage.Failure.invalidAuthSecret) {
            try WebPushMessage.seal([1], p256dh: key, auth: Array(auth.prefix(15)), paddedSize: 16)
        }
        #expect(throws: WebPushMessage.Failure.tooLong(max: 16)) {
            try WebPushMessage.seal(Array(repeating: 1, count: 17), p256dh: key, auth: auth, paddedSize: 16)
        }
        #expect(throws: WebPushMessage.Failure.self) {
            try WebPushMessage.seal([1], p256dh: key, auth: auth, paddedSize: 5_000)
        }
    }

    /// http_ece (PyPI, the aes128gcm coding pywebpush uses) as the browser: it opens what `seal` made, and
    /// `open` reads what it sealed, with keys Python made.
    @Test func httpEceAgreesBothWays() throws {
        let script = """
            import base64, json, sys, http_ece
            from cryptography.hazmat.primitives.asymmetric import ec
            from cryptography.hazmat.primitives import serialization
            b = lambda x: base64.urlsafe_b64encode(x).rstrip(b"=").decode()
            d = lambda x: base64.urlsafe_b64decode(x + "=" * (-len(x) % 4))
            mode = sys.argv[1]
            if mode == "keys":
                k = ec.generate_private_key(ec.SECP256R1())
                pub = k.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
                raw = k.private_numbers().private_value.to_bytes(32, "big")
                import os
                print(json.dumps({"private": b(raw), "p256dh": b(pub), "auth": b(os.urandom(16))}))
            elif mode == "open":
                keys = json.loads(sys.argv[2])
                k = ec.derive_private_key(int.from_bytes(d(keys["private"]), "big"), ec.SECP256R1())
                print(b(http_ece.decrypt(sys.stdin.buffer.read(), private_key=k, auth_secret=d(keys["auth"]), version="aes128gcm")))
            else:
                keys = json.loads(sys.argv[2])
                sender = ec.generate_private_key(ec.SECP256R1())
                body = http_ece.encrypt(b"sealed by http_ece", private_key=sender, dh=d(keys["p256dh"]), auth_secret=d(keys["auth"]), version="aes128gcm")
                sys.stdout.write(b(body))
            """
        func python(_ args: [String], stdin: Data = Data()) throws -> String {
            let r = try Spawned.run("/usr/bin/env", ["python3", "-c", script] + args, stdin: stdin)
            try #require(r.status == 0, "\(String(decoding: r.stderr, as: UTF8.self))")
            return String(decoding: r.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let keysJSON = try python(["keys"])
        let keys = try #require(try JSONSerialization.jsonObject(with: Data(keysJSON.utf8)) as? [String: String])
        let p256dh = Self.b64u(try #require(keys["p256dh"]))
        let auth = Self.b64u(try #require(keys["auth"]))
        let message = Array(#"{"kind":"message","id":"m_42"}"#.utf8)
        let body = try WebPushMessage.seal(message, p256dh: p256dh, auth: auth, paddedSize: 128)
        #expect(Self.b64u(try python(["open", keysJSON], stdin: Data(body))) == message)
        let theirs = Self.b64u(try python(["seal", keysJSON]))
        let receiver = try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.b64u(try #require(keys["private"])))
        #expect(try WebPushMessage.open(theirs, privateKey: receiver, auth: auth) == Array("sealed by http_ece".utf8))
    }
}
