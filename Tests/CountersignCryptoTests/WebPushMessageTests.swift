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
}
